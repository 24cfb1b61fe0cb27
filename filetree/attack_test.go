package filetree

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHardLinkOutOfTheTree: a run may hard-link any file it may link
// into its worktree. With fs.protected_hardlinks on (as on this machine)
// that is only a file it could read anyway; where it is off (a host or an
// old kernel that leaves it so), link(2) needs no access to the file at
// all, and a root-owned /etc/shadow linked in would be read by Parley, as
// root, for the browser. Simulated here by root making the link: a file
// of another owner with more than one link is refused by Read and
// OpenFile, not read; a file of the tree's own owner with two names (the
// run's own hard link) is still shown.
func TestHardLinkOutOfTheTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown the tree to a run's uid")
	}
	const runUID = 54321
	base := t.TempDir()
	top := filepath.Join(base, "wt")
	if err := os.Mkdir(top, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(base, "shadow")
	if err := os.WriteFile(secret, []byte("root:$y$secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(top, "shadow")); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(top, "a.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(mine, filepath.Join(top, "b.txt")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, mine} {
		if err := os.Chown(p, runUID, runUID); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Open(base, "wt")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if c, err := tr.Read("shadow", MaxView); !errors.Is(err, ErrLinkedIn) {
		t.Errorf("Read(shadow) = %q, %v; want ErrLinkedIn", c.Data, err)
	}
	if f, _, err := tr.OpenFile("shadow"); !errors.Is(err, ErrLinkedIn) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenFile(shadow): %v; want ErrLinkedIn", err)
	}
	if c, err := tr.Read("b.txt", MaxView); err != nil || string(c.Data) != "mine" {
		t.Errorf("Read(b.txt) = %q, %v; want the run's own file", c.Data, err)
	}
}
