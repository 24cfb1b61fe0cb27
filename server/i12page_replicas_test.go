package server

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestFaultRunFilesSweptWhenReplicaLapses SIGKILLs a replica whose run
// waits on an ask: the run's token files (ask_user config, --mcp-config)
// stay behind. The replica that is already running when the killed one's
// lease lapses takes its sessions over and removes those files; nothing
// waits for a restart of the killed replica.
func TestFaultRunFilesSweptWhenReplicaLapses(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch y")}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("make y")
	e.waitInput(wa, s.ID)
	dir := filepath.Join(e.dataDir, "run", a.id)
	files := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if len(files()) == 0 {
		t.Fatalf("replica A's live run has no files in %s; the test cannot see a sweep", dir)
	}
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	a.stop(syscall.SIGKILL)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the crash took the run too

	// A's lease lapses after PARLEY_LEASE_TTL (2 s); B's next heartbeat
	// takes it over. This waits on the filesystem, with a deadline.
	deadline := time.Now().Add(60 * time.Second)
	for len(files()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("replica A's run files are still there a minute after it was killed: %v", files())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the lapsed replica's directory went too (%v); only its files may go", err)
	}
	_ = b // B had to be running before A lapsed: its start-up sweep saw A live
}
