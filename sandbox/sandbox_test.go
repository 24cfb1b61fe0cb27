package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"parley/runner"
)

func TestParseRange(t *testing.T) {
	tests := []struct {
		in          string
		first, last int
		ok          bool
	}{
		{"200000-299999", 200000, 299999, true},
		{" 5000 - 6000 ", 5000, 6000, true},
		{"0-100", 0, 0, false},     // would hand out root's and system uids
		{"6000-5000", 0, 0, false}, // backwards
		{"200000", 0, 0, false},
		{"a-b", 0, 0, false},
	}
	for _, tt := range tests {
		first, last, err := ParseRange(tt.in)
		if (err == nil) != tt.ok || first != tt.first || last != tt.last {
			t.Errorf("ParseRange(%q) = %d, %d, %v", tt.in, first, last, err)
		}
	}
}

func owner(t *testing.T, path string) (uid int, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), fi.Mode().Perm()
}

func TestConfine(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	data := filepath.Join(enterableTempDir(t), "data")
	sb, err := New(data, "300000-300100", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.UID(101); err == nil {
		t.Error("project 101 got a uid outside 300000-300100")
	}
	proj := filepath.Join(data, "projects", "7")
	spec := runner.Spec{ProjectID: 7, Workspace: filepath.Join(proj, "workspace"), ConfigDir: filepath.Join(proj, "claude"),
		Home: filepath.Join(proj, "home"), WritableDirs: []string{filepath.Join(data, "repos", "7")},
		AskConfigPath: filepath.Join(data, "run", "askuser-x.json")}
	for _, d := range []string{spec.Workspace, spec.ConfigDir, spec.Home, filepath.Join(data, "run")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(spec.Workspace, "a.txt"), []byte("x"), 0o644)
	os.WriteFile(spec.AskConfigPath, []byte("{}"), 0o600)
	cmd := exec.Command("true")
	if err := sb.Confine(cmd, spec); err != nil {
		t.Fatal(err)
	}
	const uid = 300007
	for _, p := range []string{spec.Workspace, spec.ConfigDir, spec.Home, spec.WritableDirs[0]} {
		if u, perm := owner(t, p); u != uid || perm != 0o700 {
			t.Errorf("%s: uid %d mode %v, want %d 0700", p, u, perm, uid)
		}
	}
	// The project's own directory stays Parley's: the run enters it, and
	// cannot put a link to another project's in place of what is in it.
	if u, perm := owner(t, proj); u != 0 || perm != 0o711 {
		t.Errorf("%s: uid %d mode %v, want Parley's (0) 0711", proj, u, perm)
	}
	if u, _ := owner(t, filepath.Join(spec.Workspace, "a.txt")); u != uid {
		t.Errorf("a file in the workspace belongs to %d", u)
	}
	if u, perm := owner(t, spec.AskConfigPath); u != uid || perm != 0o600 {
		t.Errorf("ask config: uid %d mode %v", u, perm)
	}
	for _, d := range []string{data, filepath.Join(data, "projects"), filepath.Join(data, "run")} {
		if _, perm := owner(t, d); perm != 0o711 {
			t.Errorf("%s: mode %v, want 0711 (enterable, not listable)", d, perm)
		}
	}
	if c := cmd.SysProcAttr.Credential; c == nil || c.Uid != uid || c.Gid != uid || c.Groups == nil || len(c.Groups) != 0 {
		t.Errorf("credential = %+v", c)
	}
	// A writable dir is walked whole once per process (git writes it as
	// the uid): a root file there, as an older release's git left, is
	// given at the first run after a start, and root walks the tree the
	// runs write no more after that.
	old := filepath.Join(spec.WritableDirs[0], "old")
	os.WriteFile(old, nil, 0o644)
	// The runner makes a missing TMPDIR (home/tmp) as root before Confine.
	tmp := filepath.Join(spec.Home, "tmp")
	os.RemoveAll(tmp)
	os.Mkdir(tmp, 0o700)
	if err := sb.Confine(exec.Command("true"), spec); err != nil {
		t.Fatal(err)
	}
	if u, _ := owner(t, tmp); u != uid {
		t.Errorf("the run's TMPDIR, made by root, belongs to %d", u)
	}
	if u, _ := owner(t, old); u != 0 {
		t.Errorf("the second run's start walked the writable dir again (a root file there belongs to %d)", u)
	}
	restarted, err := New(data, "300000-300100", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Confine(exec.Command("true"), spec); err != nil {
		t.Fatal(err)
	}
	if u, _ := owner(t, old); u != uid {
		t.Errorf("after a restart, a root file in a writable dir belongs to %d", u)
	}
}

func TestInstall(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	dir := enterableTempDir(t)
	src := filepath.Join(dir, "private", "prog")
	os.MkdirAll(filepath.Dir(src), 0o700)
	os.WriteFile(src, []byte("#!/bin/sh\necho ok\n"), 0o700)
	sb, err := New(filepath.Join(dir, "data"), DefaultRange, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		got, err := sb.Install(src, "prog")
		if err != nil {
			t.Fatal(err)
		}
		if u, perm := owner(t, got); u != 0 || perm != 0o755 {
			t.Errorf("installed %s: uid %d mode %v", got, u, perm)
		}
	}
	// One others can already run is used where it is.
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	if got, err := sb.Install("/bin/sh", "sh"); err != nil || got != sh {
		t.Errorf("Install(/bin/sh) = %s, %v; want it used in place", got, err)
	}
	// A project's uid can run it though the original's directory is private.
	cmd := exec.Command(filepath.Join(dir, "data", "bin", "prog"))
	setCredential(cmd, 200001)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Errorf("run as uid 200001: %q, %v", out, err)
	}
}

// enterableTempDir is a t.TempDir whose parent (private to root, 0700) others may enter.
func enterableTempDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNewRefusesAPrivateParent(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	_, err := New(filepath.Join(t.TempDir(), "data"), DefaultRange, nil)
	if err == nil {
		t.Fatal("New accepted a data directory inside a directory the runs cannot enter")
	}
}

func TestConfineRefusesAnUnreachableWorkspace(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	sb, err := New(filepath.Join(enterableTempDir(t), "data"), DefaultRange, nil)
	if err != nil {
		t.Fatal(err)
	}
	private, err := os.MkdirTemp("", "parley-private-") // 0700: no other uid gets in
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(private) })
	ws := filepath.Join(private, "repo")
	os.MkdirAll(ws, 0o755)
	err = sb.Confine(exec.Command("true"), runner.Spec{ProjectID: 1, Workspace: ws})
	if err == nil {
		fi, _ := os.Stat(filepath.Dir(ws))
		t.Fatalf("Confine accepted a workspace the project's uid cannot reach (%s %v)", ws, fi.Mode())
	}
}
