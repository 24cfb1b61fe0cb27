package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"parley/sandbox"
	"parley/store"
	"parley/store/pgtest"
)

// fakeMachine is a scan over a made-up machine: its own /proc, account
// files and a /tmp, with the data dir inside that /tmp.
type fakeMachine struct {
	t    *testing.T
	root string
	scan uidScan
}

func newFakeMachine(t *testing.T) *fakeMachine {
	root := t.TempDir()
	m := &fakeMachine{t: t, root: root}
	for _, d := range []string{"proc", "etc", "tmp/parley-data"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m.scan = uidScan{proc: filepath.Join(root, "proc"),
		accounts: []string{filepath.Join(root, "etc/passwd"), filepath.Join(root, "etc/group")},
		subIDs:   []string{filepath.Join(root, "etc/subuid")},
		trees:    []string{filepath.Join(root, "tmp")}, dataDir: filepath.Join(root, "tmp/parley-data"), files: true}
	m.write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n")
	m.write("etc/subuid", "alice:100000:65536\n")
	return m
}

func (m *fakeMachine) write(name, text string) string {
	m.t.Helper()
	p := filepath.Join(m.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		m.t.Fatal(err)
	}
	return p
}

// process adds /proc/<pid> running as uid, with environ.
func (m *fakeMachine) process(pid string, uid int, environ string) {
	id := strconv.Itoa(uid)
	m.write("proc/"+pid+"/status", "Name:\tsleep\nUid:\t"+id+"\t"+id+"\t"+id+"\t"+id+"\nGid:\t0\t0\t0\t0\n")
	m.write("proc/"+pid+"/environ", environ)
}

// file adds a file in the fake /tmp owned by uid (needs root).
func (m *fakeMachine) file(name string, uid int) {
	m.t.Helper()
	p := m.write("tmp/"+name, "x")
	if err := os.Lchown(p, uid, 0); err != nil {
		m.t.Skipf("chown needs root: %v", err)
	}
}

// TestUIDScan: each thing that uses a uid of the range is named; this
// installation's own runs and files are not; files are read to a depth.
func TestUIDScan(t *testing.T) {
	const first, last = 2000000, 2099999
	tests := []struct {
		name  string
		setup func(m *fakeMachine)
		want  string // "" = free
	}{
		{"a free range", func(m *fakeMachine) {}, ""},
		{"a user", func(m *fakeMachine) {
			m.write("etc/passwd", "svc:x:2000005:2000005::/:/bin/false\n")
		}, "names svc with id 2000005"},
		{"a group", func(m *fakeMachine) { m.write("etc/group", "grp:x:2099999:\n") }, "names grp with id 2099999"},
		{"a subordinate range", func(m *fakeMachine) { m.write("etc/subuid", "bob:2050000:65536\n") }, "gives bob the ids 2050000-2115535"},
		{"another's process", func(m *fakeMachine) { m.process("42", first+7, "HOME=/home/x\x00") }, "process 42 runs as uid or gid 2000007"},
		{"a run of this installation", func(m *fakeMachine) {
			m.process("43", first+1, "CLAUDE_CONFIG_DIR="+m.scan.dataDir+"/projects/1/claude\x00")
		}, ""},
		{"a file in /tmp", func(m *fakeMachine) { m.file("a/b/owned", first+3) }, "tmp/a/b/owned belongs to uid or gid 2000003"},
		{"a file too deep to look at", func(m *fakeMachine) { m.file("a/b/c/d/owned", first+3) }, ""},
		{"a file in the data dir", func(m *fakeMachine) { m.file("parley-data/x", first+3) }, ""},
		{"a uid of this installation's projects", func(m *fakeMachine) {
			m.file("left-by-a-run", first+2)
			m.scan.ours = func(uid int) bool { return uid > first && uid <= first+5 }
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeMachine(t)
			tt.setup(m)
			got := m.scan.inUse(first, last)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("inUse = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRandomUIDRange: a random range is valid, aligned, above the usual
// ranges, and clear of the machine's accounts; two installations rarely
// pick the same.
func TestRandomUIDRange(t *testing.T) {
	m := newFakeMachine(t)
	seen := map[string]bool{}
	for range 20 {
		r, err := randomUIDRange(m.scan)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := sandbox.ParseRange(r)
		if err != nil {
			t.Fatal(err)
		}
		if first%uidRangeAlign != 0 || first < uidRangeLow || last-first+1 != uidRangeSize {
			t.Errorf("range %s: want %d uids from a multiple of %d above %d", r, uidRangeSize, uidRangeAlign, uidRangeLow)
		}
		if use := m.scan.accountsUse(first, last); use != "" {
			t.Errorf("range %s is in use: %s", r, use)
		}
		seen[r] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 picks gave %d ranges", len(seen))
	}
}

// TestSettleUIDRange: the range is chosen once and kept in the database
// (a second start, or a replica, gets the same); PARLEY_UID_RANGE
// overrides it; a range another user's file holds is refused at start
// with a sentence that says what to do; once adopted, the installation's
// own runs' files in /tmp no longer count against it.
func TestSettleUIDRange(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the range is checked only when Parley is root")
	}
	ctx := t.Context()
	st, err := store.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := newFakeMachine(t)
	c := config{DataDir: m.scan.dataDir}
	c.Isolation = "auto"
	r1, err := settleUIDRangeOn(ctx, c, st, m.scan, log)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := settleUIDRangeOn(ctx, c, st, m.scan, log)
	if err != nil || r2 != r1 {
		t.Fatalf("second start: %q, %v; want the kept %q", r2, err, r1)
	}
	first, _, _ := sandbox.ParseRange(r1)
	// A run of the installation left a file in /tmp: not held against it.
	m.file("run-left-this", first+1)
	if r, err := settleUIDRangeOn(ctx, c, st, m.scan, log); err != nil || r != r1 {
		t.Errorf("after a run's file in /tmp: %q, %v; want %q", r, err, r1)
	}

	// A range set by hand that another user's file holds is refused.
	c.UIDRange = "3000000-3099999"
	m.file("someone-else", 3000000+50)
	_, err = settleUIDRangeOn(ctx, c, st, m.scan, log)
	if err == nil || !strings.Contains(err.Error(), "the uid range 3000000-3099999 for runs is in use on this machine") ||
		!strings.Contains(err.Error(), "someone-else belongs to uid or gid 3000050") || !strings.Contains(err.Error(), "Set PARLEY_UID_RANGE") {
		t.Errorf("a used range: %v", err)
	}
	// A free one set by hand is taken as is.
	c.UIDRange = "4000000-4099999"
	if r, err := settleUIDRangeOn(ctx, c, st, m.scan, log); err != nil || r != c.UIDRange {
		t.Errorf("PARLEY_UID_RANGE: %q, %v", r, err)
	}
	// Without it again, the installation's own range is back, its runs'
	// files still not held against it.
	c.UIDRange = ""
	if r, err := settleUIDRangeOn(ctx, c, st, m.scan, log); err != nil || r != r1 {
		t.Errorf("PARLEY_UID_RANGE unset again: %q, %v; want %q", r, err, r1)
	}
}
