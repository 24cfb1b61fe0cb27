package main

import (
	"io"
	"strings"
	"testing"

	"parley/gateway"
)

// TestGatewayLimitsConfig: a project's model requests are limited by
// default (PARLEY_PROJECT_RPM=0 lifts it) and max_tokens is capped at
// 32000 unless PARLEY_MAX_TOKENS or -max-tokens says otherwise.
func TestGatewayLimitsConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parseConfig("serve", nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.ProjectRPM != 120 || c.MaxTokens != gateway.DefaultMaxTokens || gateway.DefaultMaxTokens != 32000 {
		t.Errorf("defaults: project rpm %d, max tokens %d; want 120, 32000", c.ProjectRPM, c.MaxTokens)
	}
	c, err = parseConfig("serve", nil, env(map[string]string{"PARLEY_PROJECT_RPM": "0", "PARLEY_MAX_TOKENS": "8000"}), io.Discard)
	if err != nil || c.ProjectRPM != 0 || c.MaxTokens != 8000 {
		t.Errorf("from env: project rpm %d, max tokens %d, %v; want 0, 8000", c.ProjectRPM, c.MaxTokens, err)
	}
	c, err = parseConfig("serve", []string{"-max-tokens", "4000"}, env(nil), io.Discard)
	if err != nil || c.MaxTokens != 4000 {
		t.Errorf("-max-tokens 4000: %d, %v", c.MaxTokens, err)
	}
	for _, bad := range []string{"0", "lots", "-1"} {
		if _, err := parseConfig("serve", nil, env(map[string]string{"PARLEY_MAX_TOKENS": bad}), io.Discard); err == nil || !strings.Contains(err.Error(), "PARLEY_MAX_TOKENS") {
			t.Errorf("PARLEY_MAX_TOKENS=%s: err %v; want one naming the variable", bad, err)
		}
	}
}
