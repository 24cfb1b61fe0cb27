package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestAutoRefusesUnconfined: a server that is not root and has no working
// bubblewrap (PATH lacks bwrap) refuses to start with PARLEY_ISOLATION=auto,
// naming PARLEY_ISOLATION=off, instead of running every run unconfined.
func TestAutoRefusesUnconfined(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	defer func(f func() bool) { runsAsRoot = f }(runsAsRoot)
	runsAsRoot = func() bool { return false }
	var logs bytes.Buffer
	c := config{DataDir: t.TempDir(), isolationConfig: isolationConfig{Isolation: "auto", Upstream: "http://127.0.0.1:1"}}
	rc, _, err := runEnvironment(t.Context(), c, nil, "/bin/true", "/bin/true", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err == nil || !strings.Contains(err.Error(), "PARLEY_ISOLATION=off") {
		t.Fatalf("auto without root or bwrap: err = %v (sandbox %v); want a refusal naming PARLEY_ISOLATION=off; logs:\n%s", err, rc.Sandbox, logs.String())
	}
}

// TestIsolationOffWarns: PARLEY_ISOLATION=off runs every run unconfined,
// and says so at every start (Warn).
func TestIsolationOffWarns(t *testing.T) {
	var logs bytes.Buffer
	c := config{DataDir: t.TempDir(), isolationConfig: isolationConfig{Isolation: "off", Upstream: "http://127.0.0.1:1"}}
	rc, _, err := runEnvironment(t.Context(), c, nil, "/bin/true", "/bin/true", nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || rc.Sandbox != nil {
		t.Fatalf("off: sandbox %v, err %v; want none, no error", rc.Sandbox, err)
	}
	if got := logs.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "PARLEY_ISOLATION=off") {
		t.Errorf("off logs no warning naming PARLEY_ISOLATION=off:\n%s", got)
	}
}
