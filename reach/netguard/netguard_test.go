package netguard

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHosts(t *testing.T) {
	got := ParseHosts(" Push.Internal , 127.0.0.1:8443,,[::1], push.example.com.")
	want := []string{"push.internal", "127.0.0.1:8443", "::1", "push.example.com"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseHosts (-want +got):\n%s", diff)
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		raw     string
		allowed string
		wantErr string // "" for accepted
	}{
		{"https://push.example.com/send/abc", "", ""},
		{"https://8.8.8.8/x", "", ""},
		{"https://[2606:4700::1111]/x", "", ""},
		{"https://push.example.com:8443/x", "", ""},
		{"http://push.example.com/x", "", "must use https: http://push.example.com/x was given"},
		{"ftp://push.example.com/x", "", "must use https"},
		{"", "", "must be an absolute https URL"},
		{"/push/abc", "", "must be an absolute https URL"},
		{"https:///x", "", "must be an absolute https URL"},
		{"https://user:pw@push.example.com/x", "", "must not carry a user name or password"},
		{"https://127.0.0.1/x", "", "loopback"},
		{"https://127.1.2.3:8443/x", "", "loopback"},
		{"https://[::1]/x", "", "loopback"},
		{"https://localhost/x", "", "loopback"},
		{"https://push.localhost/x", "", "loopback"},
		{"https://10.0.0.5/x", "", "private"},
		{"https://172.16.0.1/x", "", "private"},
		{"https://192.168.1.1/x", "", "private"},
		{"https://[fd00::1]/x", "", "private"},
		{"https://169.254.169.254/latest/meta-data", "", "link-local"},
		{"https://[fe80::1]/x", "", "link-local"},
		{"https://100.64.0.1/x", "", "shared (CGNAT)"},
		{"https://224.0.0.1/x", "", "multicast"},
		{"https://[ff02::1]/x", "", "multicast"},
		{"https://0.0.0.0/x", "", "unspecified"},
		{"https://[::]/x", "", "unspecified"},
		{"https://[::ffff:10.0.0.1]/x", "", "private"},
		{"https://[::ffff:127.0.0.1]/x", "", "loopback"},
		{"https://[64:ff9b::a00:1]/x", "", "private"},
		{"https://198.18.0.1/x", "", "reserved"},
		{"https://240.0.0.1/x", "", "reserved"},
		// Allowed by the operator: any scheme of http(s), any address.
		{"http://127.0.0.1:8080/push/abc", "127.0.0.1", ""},
		{"http://127.0.0.1:8080/push/abc", "127.0.0.1:8080", ""},
		{"http://127.0.0.1:9090/push/abc", "127.0.0.1:8080", "must use https"},
		{"https://127.0.0.1:9090/push/abc", "127.0.0.1:8080", "loopback"},
		{"https://10.0.0.5/x", "10.0.0.5:443", ""},
		{"http://[::1]:8080/x", "[::1]", ""},
		{"http://Push.Internal:8080/x", "push.internal:8080", ""},
		{"http://push.internal:8081/x", "push.internal:8080", "must use https"},
		{"ftp://127.0.0.1/x", "127.0.0.1", "must use https"},
	}
	for _, tt := range tests {
		t.Run(tt.raw+"|"+tt.allowed, func(t *testing.T) {
			u, err := CheckURL(tt.raw, ParseHosts(tt.allowed))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("CheckURL(%q, %q) = %v, want accepted", tt.raw, tt.allowed, err)
			case tt.wantErr == "" && u == nil:
				t.Fatalf("CheckURL(%q, %q) accepted without a URL", tt.raw, tt.allowed)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("CheckURL(%q, %q) accepted, want an error with %q", tt.raw, tt.allowed, tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("CheckURL(%q, %q) = %q, want it to say %q", tt.raw, tt.allowed, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("error %q does not wrap ErrRefused", err)
			}
			if err != nil && !strings.HasSuffix(err.Error(), ".") {
				t.Errorf("error %q is not a sentence", err)
			}
		})
	}
}
