package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// PARLEY_WARM_SPEND_REFILL (or -warm-spend-refill) is the pool's
// warm.Config.SpendRefill (serve.go hands c.Warm to warm.New); a value
// out of its bounds, or not a duration, stops the start with an error
// that names it.
func TestWarmSpendRefillConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		{"default", nil, nil, 15 * time.Second},
		{"seconds", nil, map[string]string{"PARLEY_WARM_SPEND_REFILL": "40"}, 40 * time.Second},
		{"a duration", nil, map[string]string{"PARLEY_WARM_SPEND_REFILL": "2m"}, 2 * time.Minute},
		{"the flag over the variable", []string{"-warm-spend-refill", "30s"}, map[string]string{"PARLEY_WARM_SPEND_REFILL": "40"}, 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig("serve", tt.args, env(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.Warm.SpendRefill != tt.want {
				t.Errorf("warm.Config.SpendRefill = %s, want %s", c.Warm.SpendRefill, tt.want)
			}
		})
	}
	for _, bad := range []string{"0", "-5", "500ms", "3601", "2h", "soon"} {
		_, err := parseConfig("serve", nil, env(map[string]string{"PARLEY_WARM_SPEND_REFILL": bad}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "PARLEY_WARM_SPEND_REFILL: want 1 to 3600 seconds") {
			t.Errorf("PARLEY_WARM_SPEND_REFILL=%s: err %v; want one naming the variable and its bounds", bad, err)
		}
	}
	for _, bad := range []string{"0s", "2h"} {
		_, err := parseConfig("serve", []string{"-warm-spend-refill", bad}, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-warm-spend-refill") {
			t.Errorf("-warm-spend-refill %s: err %v; want one naming the flag", bad, err)
		}
	}
}
