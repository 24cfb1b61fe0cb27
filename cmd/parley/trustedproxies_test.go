package main

import (
	"io"
	"strings"
	"testing"
)

func TestTrustedProxiesConfig(t *testing.T) {
	for _, tt := range []struct {
		v    string
		n    int
		fail string
	}{
		{"", 0, ""},
		{"10.0.0.0/8, fd00::/8, 192.0.2.7", 3, ""},
		{"proxy.internal", 0, `PARLEY_TRUSTED_PROXIES: "proxy.internal" is not an address range`},
	} {
		getenv := func(k string) string {
			if k == "PARLEY_TRUSTED_PROXIES" {
				return tt.v
			}
			return ""
		}
		c, err := parseConfig("serve", nil, getenv, io.Discard)
		switch {
		case tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)):
			t.Errorf("%q: error %v, want one saying %q", tt.v, err, tt.fail)
		case tt.fail == "" && err != nil:
			t.Errorf("%q: %v", tt.v, err)
		case tt.fail == "" && c.TrustedProxies.Len() != tt.n:
			t.Errorf("%q: %d ranges, want %d", tt.v, c.TrustedProxies.Len(), tt.n)
		}
	}
}
