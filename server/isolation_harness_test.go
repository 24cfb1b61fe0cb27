package server

import (
	"os"
	"path/filepath"

	"parley/runner"
	"parley/sandbox"
)

// upstreamKey is the "real" model key the test gateway sends upstream; no
// run may ever see it.
const upstreamKey = "sk-upstream-real-key-never-in-a-run"

// toolsOf is the runs' sandbox for git, as serve wires it.
func toolsOf(s runner.Sandbox) ToolSandbox {
	t, _ := s.(ToolSandbox)
	return t
}

// runtimeDir is where the env's runs' ask_user config files live.
func (e *env) runtimeDir() string {
	d := filepath.Join(e.dataDir, "run")
	if err := os.MkdirAll(d, 0o700); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// confine confines the env's runs as `parley serve` does: mode "uid" gives
// them per-project uids (as root; without root the test is skipped), mode
// "bwrap" runs them in bubblewrap (as when Parley is not root).
func (e *env) confine(rc *runner.Config, mode string) {
	e.t.Helper()
	if mode == "bwrap" {
		home, _ := os.UserHomeDir()
		sb, err := sandbox.NewBubblewrap(e.t.Context(), []string{e.dataDir, home}, []string{rc.SelfExe})
		if err != nil {
			e.t.Fatal(err)
		}
		rc.Sandbox = sb
		return
	}
	if !sandbox.Available() {
		e.t.Skip("per-project uids need root")
	}
	// t.TempDir's parent is private to root (0700); the runs must enter it.
	if err := os.Chmod(filepath.Dir(e.dataDir), 0o711); err != nil {
		e.t.Fatal(err)
	}
	sb, err := sandbox.New(e.dataDir, sandbox.DefaultRange, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if rc.ClaudeBin, err = sb.Install(rc.ClaudeBin, "claude"); err != nil {
		e.t.Fatal(err)
	}
	if rc.SelfExe, err = sb.Install(rc.SelfExe, "parley"); err != nil {
		e.t.Fatal(err)
	}
	if err := sb.Check(e.t.Context(), rc.ClaudeBin); err != nil {
		e.t.Fatal(err)
	}
	rc.Sandbox = sb
}
