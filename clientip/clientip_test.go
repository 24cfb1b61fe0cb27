package clientip

import (
	"net/http/httptest"
	"testing"
)

func TestClient(t *testing.T) {
	r, err := Parse("10.0.0.0/8, 192.168.1.1, fd00::/8, ::ffff:172.16.0.0/108")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		remote string
		fwd    []string // Forwarded lines
		xff    []string // X-Forwarded-For lines
		want   string
	}{
		{"no headers, untrusted peer", "203.0.113.5:4000", nil, nil, "203.0.113.5"},
		{"spoofed XFF from an untrusted peer", "203.0.113.5:4000", nil, []string{"198.51.100.1"}, "203.0.113.5"},
		{"spoofed Forwarded from an untrusted peer", "203.0.113.5:4000", []string{"for=198.51.100.1"}, nil, "203.0.113.5"},
		{"untrusted peer claiming a trusted hop", "203.0.113.5:4000", nil, []string{"10.0.0.1"}, "203.0.113.5"},
		{"trusted peer, no header", "10.0.0.2:4000", nil, nil, "10.0.0.2"},
		{"one trusted proxy", "10.0.0.2:4000", nil, []string{"198.51.100.7"}, "198.51.100.7"},
		{"client's own XFF is left of the proxy's", "10.0.0.2:4000", nil, []string{"1.2.3.4, 198.51.100.7"}, "198.51.100.7"},
		{"chain of trusted proxies", "10.0.0.2:4000", nil, []string{"1.2.3.4, 198.51.100.7, 192.168.1.1, 10.9.9.9"}, "198.51.100.7"},
		{"chain split over header lines", "10.0.0.2:4000", nil, []string{"1.2.3.4, 198.51.100.7", "192.168.1.1"}, "198.51.100.7"},
		{"untrusted proxy in the chain is the client", "10.0.0.2:4000", nil, []string{"198.51.100.7, 203.0.113.99, 10.9.9.9"}, "203.0.113.99"},
		{"every hop trusted", "10.0.0.2:4000", nil, []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"XFF with a port", "10.0.0.2:4000", nil, []string{"198.51.100.7:5555"}, "198.51.100.7"},
		{"XFF IPv6", "10.0.0.2:4000", nil, []string{"2001:db8::1"}, "2001:db8::1"},
		{"XFF IPv6 bracketed with a port", "10.0.0.2:4000", nil, []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"XFF IPv4-mapped", "10.0.0.2:4000", nil, []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
		{"IPv6 trusted peer", "[fd00::5]:4000", nil, []string{"2001:db8::9"}, "2001:db8::9"},
		{"IPv4-mapped trusted peer", "[::ffff:10.0.0.2]:4000", nil, []string{"198.51.100.7"}, "198.51.100.7"},
		{"zone dropped", "[fe80::1%eth0]:4000", nil, nil, "fe80::1"},
		{"Forwarded plain", "10.0.0.2:4000", []string{"for=198.51.100.7;proto=https"}, nil, "198.51.100.7"},
		{"Forwarded quoted IPv6 with port", "10.0.0.2:4000", []string{`for="[2001:db8:cafe::17]:4711"`}, nil, "2001:db8:cafe::17"},
		{"Forwarded quoted IPv4 with port", "10.0.0.2:4000", []string{`For="198.51.100.7:47011"`}, nil, "198.51.100.7"},
		{"Forwarded chain", "10.0.0.2:4000", []string{`for=1.2.3.4, for=198.51.100.7;by=10.0.0.2, for="192.168.1.1"`}, nil, "198.51.100.7"},
		{"Forwarded quoted comma does not split", "10.0.0.2:4000", []string{`for=198.51.100.7;host="a,b"`}, nil, "198.51.100.7"},
		{"Forwarded unknown from the proxy", "10.0.0.2:4000", []string{"for=unknown"}, nil, "10.0.0.2"},
		{"Forwarded obfuscated behind a trusted hop", "10.0.0.2:4000", []string{"for=_hidden, for=10.3.3.3"}, nil, "10.3.3.3"},
		{"Forwarded element without for", "10.0.0.2:4000", []string{"proto=https"}, nil, "10.0.0.2"},
		{"Forwarded unterminated quote", "10.0.0.2:4000", []string{`for="198.51.100.7`}, nil, "10.0.0.2"},
		{"garbage XFF", "10.0.0.2:4000", nil, []string{"not an address"}, "10.0.0.2"},
		{"garbage left of the client", "10.0.0.2:4000", nil, []string{"<script>, 198.51.100.7"}, "198.51.100.7"},
		{"empty XFF", "10.0.0.2:4000", nil, []string{""}, "10.0.0.2"},
		{"both headers agree", "10.0.0.2:4000", []string{"for=198.51.100.7"}, []string{"198.51.100.7"}, "198.51.100.7"},
		{"both headers disagree (one is the client's)", "10.0.0.2:4000", []string{"for=6.6.6.6"}, []string{"198.51.100.7"}, "10.0.0.2"},
		{"unparsable peer kept as is", "pipe", nil, []string{"198.51.100.7"}, "pipe"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tt.remote
			for _, v := range tt.fwd {
				req.Header.Add("Forwarded", v)
			}
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			if got := r.Client(req); got != tt.want {
				t.Errorf("Client = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestZeroResolverTrustsNone(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "127.0.0.1:9"
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	req.Header.Set("Forwarded", "for=198.51.100.7")
	if got, want := (Resolver{}).Client(req), "127.0.0.1"; got != want {
		t.Errorf("Client = %q, want %q", got, want)
	}
}

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		fail bool
	}{
		{"", 0, false},
		{" , ", 0, false},
		{"10.0.0.0/8", 1, false},
		{"10.0.0.1/8, ::1, 127.0.0.1", 3, false},
		{"10.0.0.0/33", 0, true},
		{"proxy.example", 0, true},
		{"10.0.0.0/8;192.168.0.0/16", 0, true},
		{"fe80::1%eth0", 0, true},
	} {
		r, err := Parse(tt.in)
		if (err != nil) != tt.fail || r.Len() != tt.n {
			t.Errorf("Parse(%q) = %d ranges, %v; want %d, failure %v", tt.in, r.Len(), err, tt.n, tt.fail)
		}
	}
}

func TestGroup(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":         "198.51.100.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2::ffff":   "2001:db8:1:2::/64",
		"::ffff:198.51.100.7":  "::ffff:198.51.100.7",
		"pipe":                 "pipe",
		"2001:db8:1:3:3:4:5:6": "2001:db8:1:3::/64",
	} {
		if got := Group(in); got != want {
			t.Errorf("Group(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWithAndOf(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "203.0.113.5:4000"
	if got, want := Of(req), "203.0.113.5"; got != want {
		t.Errorf("Of without With = %q, want %q (the peer)", got, want)
	}
	if got, want := Of(With(req, "198.51.100.7")), "198.51.100.7"; got != want {
		t.Errorf("Of(With) = %q, want %q", got, want)
	}
}
