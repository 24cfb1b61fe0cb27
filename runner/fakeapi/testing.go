package fakeapi

import (
	"os"
	"os/exec"
	"testing"
)

// Serve starts a Server for the scenario and closes it when the test ends.
func Serve(tb testing.TB, sc Scenario) *Server {
	tb.Helper()
	s := New(sc)
	if err := s.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Env returns the environment entries that point the claude CLI at s and
// isolate it in configDir (its ~/.claude), to append to os.Environ().
func (s *Server) Env(configDir string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + s.URL(),
		"ANTHROPIC_API_KEY=sk-test",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CONFIG_DIR=" + configDir,
	}
}

// ClaudeBin returns the claude CLI to test with: $PARLEY_CLAUDE_BIN, else
// `claude` on PATH. Without one the test is skipped, or fails when
// PARLEY_REQUIRE_ALL=1.
func ClaudeBin(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv("PARLEY_CLAUDE_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("claude"); err == nil {
		return bin
	}
	if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
		tb.Fatal("claude CLI not found: set PARLEY_CLAUDE_BIN or put claude on PATH (scripts/install-test-deps.sh installs it)")
	}
	tb.Skip("claude CLI not found: set PARLEY_CLAUDE_BIN or put claude on PATH")
	return ""
}
