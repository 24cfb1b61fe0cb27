package askuser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteLoadConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Config{URL: "http://127.0.0.1:8080/internal/ask", Token: NewToken(), TimeoutSeconds: 600}
	path, err := WriteConfig(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir {
		t.Errorf("WriteConfig path %q is not in %q", path, dir)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("config file mode = %v, want 0600", got)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadConfig mismatch (-want +got):\n%s", diff)
	}
	// Each call makes a new file rather than overwriting.
	path2, err := WriteConfig(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	if path2 == path {
		t.Errorf("second WriteConfig reused path %q", path)
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if len(a) != 43 || strings.ContainsAny(a, "+/=") {
		t.Errorf("NewToken() = %q, want 43 base64url characters", a)
	}
	if a == b {
		t.Errorf("NewToken() returned %q twice", a)
	}
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		c       Config
		wantErr string // substring; "" means accepted
	}{
		{"ipv4 loopback", Config{URL: "http://127.0.0.1:9/ask", Token: "t"}, ""},
		{"other 127/8 address", Config{URL: "http://127.1.2.3:9/ask", Token: "t"}, ""},
		{"ipv6 loopback", Config{URL: "http://[::1]:9/ask", Token: "t"}, ""},
		{"localhost", Config{URL: "http://LocalHost:9/ask", Token: "t", TimeoutSeconds: 5}, ""},
		{"public ip", Config{URL: "http://93.184.216.34/ask", Token: "t"}, "not a loopback address"},
		{"private ip", Config{URL: "http://192.168.1.5:8080/ask", Token: "t"}, "not a loopback address"},
		{"host name", Config{URL: "https://example.com/ask", Token: "t"}, "not a loopback address"},
		{"localhost lookalike", Config{URL: "http://localhost.example.com/ask", Token: "t"}, "not a loopback address"},
		{"unspecified address", Config{URL: "http://0.0.0.0:9/ask", Token: "t"}, "not a loopback address"},
		{"no scheme", Config{URL: "127.0.0.1:9/ask", Token: "t"}, "url"},
		{"empty token", Config{URL: "http://127.0.0.1:9/ask"}, "token: must not be empty"},
		{"negative timeout", Config{URL: "http://127.0.0.1:9/ask", Token: "t", TimeoutSeconds: -1}, "timeout_seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			data, err := json.Marshal(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadConfig(path)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadConfig() error = %v, want nil", err)
				}
				if diff := cmp.Diff(tt.c, got); diff != "" {
					t.Errorf("LoadConfig mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadConfig() error = %v, want one containing %q", err, tt.wantErr)
			}
			// WriteConfig refuses the same configs.
			if _, err := WriteConfig(t.TempDir(), tt.c); err == nil {
				t.Errorf("WriteConfig accepted %+v", tt.c)
			}
		})
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"", filepath.Join(dir, "missing.json"), bad} {
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("LoadConfig(%q) succeeded, want an error", path)
		}
	}
}

func TestSweepConfigs(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		if _, err := WriteConfig(dir, Config{URL: "http://127.0.0.1:1/ask", Token: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "keep.json")
	if err := os.WriteFile(other, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := SweepConfigs(dir)
	if err != nil || n != 2 {
		t.Fatalf("SweepConfigs = %d, %v; want 2, nil", n, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 1 || left[0] != other {
		t.Errorf("left %v, want only %s", left, other)
	}
}
