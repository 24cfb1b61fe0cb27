package main

import (
	"io"
	"strings"
	"testing"

	"parley/metrics"
)

// PARLEY_METRICS_LOOPBACK: by default only Parley's own uid and root
// scrape from loopback without the token (own); open admits every
// loopback client; token has loopback scrapers send the token too (a
// same-host proxy that adds no forwarding header) and needs a token; any
// other value is refused naming the variable.
func TestMetricsLoopbackConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		env  map[string]string
		want metrics.Loopback
		err  string
	}{
		{nil, metrics.LoopbackOwn, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "own"}, metrics.LoopbackOwn, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "open"}, metrics.LoopbackOpen, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "token", "PARLEY_METRICS_TOKEN": "s"}, metrics.LoopbackToken, ""},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "token"}, 0, "needs PARLEY_METRICS_TOKEN"},
		{map[string]string{"PARLEY_METRICS_LOOPBACK": "closed", "PARLEY_METRICS_TOKEN": "s"}, 0, "PARLEY_METRICS_LOOPBACK"},
	} {
		got, err := parseConfig("serve", nil, env(c.env), io.Discard)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.env, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: err %v, want one saying %q", c.env, err, c.err)
		case err == nil && got.MetricsLoopback != c.want:
			t.Errorf("%v: loopback %v, want %v", c.env, got.MetricsLoopback, c.want)
		}
	}
}
