package main

import (
	"io"
	"strings"
	"testing"
)

// PARLEY_METRICS_LOOPBACK=token has loopback scrapers send the token too
// (a same-host proxy that adds no forwarding header); it needs a token,
// and any other value is refused naming the variable.
func TestMetricsLoopbackConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env       map[string]string
		tokenOnly bool
		err       string
	}{
		{nil, false, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "open"}, false, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "token", "PARLEY_METRICS_TOKEN": "s"}, true, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "token"}, false, "needs PARLEY_METRICS_TOKEN"},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "closed", "PARLEY_METRICS_TOKEN": "s"}, false, "PARLEY_METRICS_LOOPBACK"},
	} {
		got, err := parseConfig("serve", nil, env(c.env), io.Discard)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: err %v, want one saying %q", c.env, err, c.err)
		case err == nil && got.MetricsTokenOnly != c.tokenOnly:
			t.Errorf("%v: token only %v, want %v", c.env, got.MetricsTokenOnly, c.tokenOnly)
		}
	}
}
