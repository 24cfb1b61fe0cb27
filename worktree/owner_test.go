package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"parley/sandbox/fdtree/swaptest"
)

// TestMatchOwnerSwapAttack performs the swap attack (swaptest) on
// MatchOwner: a run of the project, whose uid owns the workspace, swaps
// directories of a session's worktree for links to root's directory
// outside while Parley (as root) gives the worktree to the workspace's
// owner. Root's directory must stay root's.
func TestMatchOwnerSwapAttack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid, tries = 300007, 5
	raced := 0
	for try := range tries {
		base := swaptest.EnterableTempDir(t)
		workspace := filepath.Join(base, "workspace")
		if err := os.Mkdir(workspace, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(workspace, uid, uid); err != nil {
			t.Fatal(err)
		}
		// The worktree's top is root's (git ran as root), a directory in
		// it the run's: the whole tree is walked.
		dir := filepath.Join(base, "worktrees", "s1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		a, during, err := swaptest.Try(t, filepath.Join(dir, "a"), uid, 300, func() error { return MatchOwner(dir, workspace) })
		raced += during
		if broken := a.Broken(); broken != "" {
			t.Fatalf("try %d: %s (%d dirs swapped for links during the walk; walk error: %v)", try+1, broken, during, err)
		}
		if missed := a.Given(); missed != "" && err == nil {
			t.Errorf("try %d: the walk did not do its work: %s", try+1, missed)
		}
		t.Logf("try %d: held; %d dirs swapped for links during the walk; walk error: %v", try+1, during, err)
	}
	if raced == 0 {
		t.Error("no try swapped a dir while the walk was under way: the attack tested nothing")
	}
}

// TestMatchOwnerFlipAttack performs the swap on the top of the walk: a
// run swaps the session's worktree itself (the worktrees dir is the
// uid's) for a link to root's directory and back, over and over, while
// MatchOwner gives the worktree to the workspace's owner.
func TestMatchOwnerFlipAttack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid, rounds = 300007, 300
	base := swaptest.EnterableTempDir(t)
	workspace := filepath.Join(base, "workspace")
	if err := os.Mkdir(workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(workspace, uid, uid); err != nil {
		t.Fatal(err)
	}
	a := swaptest.New(t, filepath.Join(base, "worktrees"), uid, 1)
	dir := filepath.Join(a.Dir, "d000")
	flips := 0
	for round := range rounds {
		// A worktree whose top is root's (git ran as root): walked.
		if err := os.Lchown(dir, 0, 0); err != nil {
			t.Fatal(err)
		}
		stop := a.Flip(t, "d000")
		err := MatchOwner(dir, workspace)
		flips += stop()
		if broken := a.Broken(); broken != "" {
			t.Fatalf("round %d: %s (the top was a link %d times meanwhile; MatchOwner: %v)", round+1, broken, flips, err)
		}
	}
	if flips == 0 {
		t.Error("the top was never a link while MatchOwner ran: the attack tested nothing")
	}
	t.Logf("%d rounds held; the top was a link %d times meanwhile", rounds, flips)
}

// TestExcludeWritesNoOtherUsersRepository: a run may make its
// repository's .git a gitdir file naming another user's repository; git
// then names that one's common dir, and Parley, as root, must not add its
// lines to that user's info/exclude.
func TestExcludeWritesNoOtherUsersRepository(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 300007
	g, ctx := New(""), t.Context()
	theirs := repo(t) // root's, say another user's
	exclude := filepath.Join(theirs, ".git", "info", "exclude")
	os.MkdirAll(filepath.Dir(exclude), 0o755)
	os.WriteFile(exclude, []byte("# theirs\n"), 0o644)
	mine := repo(t)
	if err := os.RemoveAll(filepath.Join(mine, ".git")); err != nil {
		t.Fatal(err)
	}
	write(t, mine, ".git", "gitdir: "+filepath.Join(theirs, ".git")+"\n")
	if err := filepath.Walk(mine, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.exclude(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(exclude); string(got) != "# theirs\n" {
		t.Errorf("another user's info/exclude was written: %q", got)
	}
}

// TestExcludeMakesAMissingInfoDir: a repository without .git/info gets
// one (0755, the common dir's owner's) holding Parley's lines.
func TestExcludeMakesAMissingInfoDir(t *testing.T) {
	g, ctx := New(""), t.Context()
	r := repo(t)
	info := filepath.Join(r, ".git", "info")
	if err := os.RemoveAll(info); err != nil {
		t.Fatal(err)
	}
	if err := g.exclude(ctx, r); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(info); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("info dir: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(info, "exclude")); !strings.Contains(string(b), "/CLAUDE.md\n") {
		t.Errorf("info/exclude = %q, want Parley's lines", b)
	}
}
