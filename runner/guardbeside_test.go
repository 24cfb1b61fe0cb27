package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGuardBeside: parley starts runs under the parley-guard installed
// beside it, and under its own run-guard when there is none or it cannot
// be run.
func TestGuardBeside(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "parley")
	small := filepath.Join(dir, GuardName)
	if got := GuardBeside(self); got != self {
		t.Errorf("no parley-guard: %s, want %s", got, self)
	}
	if err := os.WriteFile(small, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := GuardBeside(self); got != self {
		t.Errorf("a parley-guard that cannot be run: %s, want %s", got, self)
	}
	if err := os.Chmod(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := GuardBeside(self); got != small {
		t.Errorf("parley-guard beside: %s, want %s", got, small)
	}
}
