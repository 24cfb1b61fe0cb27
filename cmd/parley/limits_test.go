package main

import (
	"io"
	"strings"
	"testing"

	"parley/limit"
	"parley/server"
)

func TestLimitsConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parseConfig("serve", nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxRuns != limit.DefaultMaxRuns() || c.Limits != server.DefaultLimits || c.RunNice != 10 {
		t.Errorf("defaults: max runs %d, run nice %d, limits %+v", c.MaxRuns, c.RunNice, c.Limits)
	}
	c, err = parseConfig("serve", []string{"-prompts-per-minute", "7"}, env(map[string]string{
		"PARLEY_MAX_RUNS": "3", "PARLEY_RUN_NICE": "12", "PARLEY_SESSIONS_PER_MINUTE": "0", "PARLEY_PROMPTS_PER_MINUTE": "5", "PARLEY_WS_PER_USER": "4",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := server.Limits{SessionsPerMinute: 0, PromptsPerMinute: 7, UploadsPerMinute: server.DefaultLimits.UploadsPerMinute, WSPerUser: 4, LoginsPerMinute: server.DefaultLimits.LoginsPerMinute}
	if c.MaxRuns != 3 || c.Limits != want || c.RunNice != 12 {
		t.Errorf("from env and flags: max runs %d, run nice %d, limits %+v; want 3, 12, %+v", c.MaxRuns, c.RunNice, c.Limits, want)
	}
	if _, err := parseConfig("serve", []string{"-run-nice", "25"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "run-nice") {
		t.Errorf("-run-nice 25: err %v; want one naming the flag", err)
	}
	for _, bad := range []map[string]string{{"PARLEY_MAX_RUNS": "0"}, {"PARLEY_MAX_RUNS": "many"}, {"PARLEY_WS_PER_USER": "-1"},
		{"PARLEY_RUN_NICE": "20"}, {"PARLEY_RUN_NICE": "-5"}, {"PARLEY_RUN_NICE": "low"}} {
		if _, err := parseConfig("serve", nil, env(bad), io.Discard); err == nil || !strings.Contains(err.Error(), "PARLEY_") {
			t.Errorf("%v: err %v; want one naming the variable", bad, err)
		}
	}
}
