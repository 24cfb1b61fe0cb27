package cluster

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"parley/store"
	"parley/store/pgtest"
)

// TestRuntimeDirSweepSparesRunningReplicas: the start sweep removes the
// runtime directory of a replica that crashed (its lock free, its row
// gone), and keeps those of a replica that runs but has not registered yet
// (its lock held: it is starting at the same moment), of a registered live
// replica, and of a replica whose lease lapsed while its process lives (a
// database outage).
func TestRuntimeDirSweepSparesRunningReplicas(t *testing.T) {
	ctx := t.Context()
	url := pgtest.New(t)
	open := func() *store.Store {
		st, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	base := t.TempDir()
	// dir makes a replica's runtime directory with a run file; held: a
	// live process holds its lock (this test, through its own open file).
	dir := func(id string, held bool) string {
		d := filepath.Join(base, id)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "askuser-1.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(d, lockName), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if held {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
		} else {
			f.Close()
		}
		return d
	}
	crashed := dir("rcrashed", false)
	starting := dir("rstarting", true)
	registered := open()
	if _, err := registered.Heartbeat(ctx, base, time.Minute); err != nil {
		t.Fatal(err)
	}
	live := dir(registered.Replica(), false)
	lapsedAlive := open()
	if _, err := lapsedAlive.Heartbeat(ctx, base, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	lapsed := dir(lapsedAlive.Replica(), true)
	time.Sleep(10 * time.Millisecond)

	self := open()
	d, n, err := OpenRuntimeDir(ctx, self, base)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n != 1 {
		t.Errorf("swept %d run files, want 1 (the crashed replica's)", n)
	}
	if _, err := os.Stat(crashed); !os.IsNotExist(err) {
		t.Errorf("the crashed replica's dir is still there (%v)", err)
	}
	for name, d := range map[string]string{"starting": starting, "registered": live, "lapsed but alive": lapsed} {
		if _, err := os.Stat(filepath.Join(d, "askuser-1.json")); err != nil {
			t.Errorf("the %s replica's run file went: %v", name, err)
		}
	}
	if d.Path != filepath.Join(base, self.Replica()) {
		t.Errorf("dir %q, want %q", d.Path, filepath.Join(base, self.Replica()))
	}
	if _, held := lockOf(d.Path); !held {
		t.Error("the new replica does not hold its dir's lock")
	}
}
