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
