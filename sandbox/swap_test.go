package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"parley/runner"
	"parley/sandbox/fdtree/swaptest"
)

// swapTries and swapDirs size the swap attack: before the fix the walk
// by path lost on the first try every time it was measured; the tries
// are there so that a slow machine still shows it.
const swapTries, swapDirs = 5, 300

// TestSwapAttack performs the swap attack (swaptest) on each tree Parley,
// as root, gives to a project's uid: a run of the project swaps listed
// directories for links to root's directory outside while the walk is
// under way. Root's directory must stay root's.
func TestSwapAttack(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	const project, uid = 7, 300007
	tests := []struct {
		name string
		// attack returns the directory to attack and the walk, given a
		// fresh data dir and its sandbox.
		attack func(t *testing.T, data string, sb *Sandbox) (string, func() error)
	}{
		{"Confine, a private dir not yet the uid's", func(t *testing.T, data string, sb *Sandbox) (string, func() error) {
			spec := swapSpec(data, project)
			mkdirs(t, spec.ConfigDir, spec.Home, spec.Workspace)
			return filepath.Join(spec.Workspace, "a"), func() error { return sb.Confine(exec.Command("true"), spec) }
		}},
		{"Confine, a writable dir (a worktree project's repository)", func(t *testing.T, data string, sb *Sandbox) (string, func() error) {
			spec := swapSpec(data, project)
			mkdirs(t, spec.ConfigDir, spec.Home, spec.Workspace)
			repo := filepath.Join(data, "projects", "7", "repo")
			spec.WritableDirs = []string{repo}
			return repo, func() error { return sb.Confine(exec.Command("true"), spec) }
		}},
		{"ConfineTool, the workspace", func(t *testing.T, data string, sb *Sandbox) (string, func() error) {
			spec := swapSpec(data, project)
			return spec.Workspace, func() error { return sb.ConfineTool(exec.Command("true"), spec) }
		}},
		{"ConfineTool, a writable dir (the worktrees)", func(t *testing.T, data string, sb *Sandbox) (string, func() error) {
			spec := swapSpec(data, project)
			mkdirs(t, spec.Workspace)
			wts := filepath.Join(data, "projects", "7", "worktrees")
			spec.WritableDirs = []string{wts}
			return wts, func() error { return sb.ConfineTool(exec.Command("true"), spec) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raced := 0
			for try := range swapTries {
				data := filepath.Join(swaptest.EnterableTempDir(t), "data")
				sb, err := New(data, "300000-300100", nil)
				if err != nil {
					t.Fatal(err)
				}
				dir, walk := tt.attack(t, data, sb)
				a, during, err := swaptest.Try(t, dir, uid, swapDirs, walk)
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
		})
	}
}

// TestFlipAttack performs the swap on the top of the walk: a run swaps
// its session's worktree itself (the worktrees dir is the uid's) for a
// link to root's directory and back, over and over, while Confine gives
// the worktree to the uid. Root's directory must stay root's, mode and
// all.
func TestFlipAttack(t *testing.T) {
	if !Available() {
		t.Skip("needs root")
	}
	const uid, rounds = 300007, 300
	data := filepath.Join(swaptest.EnterableTempDir(t), "data")
	sb, err := New(data, "300000-300100", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := swapSpec(data, 7)
	mkdirs(t, spec.ConfigDir, spec.Home)
	a := swaptest.New(t, filepath.Join(data, "projects", "7", "worktrees"), uid, 1)
	spec.Workspace = filepath.Join(a.Dir, "d000")
	flips := 0
	for round := range rounds {
		// A worktree whose top is not the uid's yet, nor 0700: Confine
		// walks it and sets its mode.
		if err := os.Lchown(spec.Workspace, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(spec.Workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		stop := a.Flip(t, "d000")
		err := sb.Confine(exec.Command("true"), spec)
		flips += stop()
		if broken := a.Broken(); broken != "" {
			t.Fatalf("round %d: %s (the top was a link %d times meanwhile; Confine: %v)", round+1, broken, flips, err)
		}
	}
	if flips == 0 {
		t.Error("the top was never a link while Confine ran: the attack tested nothing")
	}
	t.Logf("%d rounds held; the top was a link %d times meanwhile", rounds, flips)
}

// swapSpec is a run's spec for project id in data, its directories
// not made.
func swapSpec(data string, id int64) runner.Spec {
	proj := filepath.Join(data, "projects", strconv.FormatInt(id, 10))
	return runner.Spec{ProjectID: id, Workspace: filepath.Join(proj, "workspace"), ConfigDir: filepath.Join(proj, "claude"),
		Home: filepath.Join(proj, "home")}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
