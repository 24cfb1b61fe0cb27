package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageNotInArgv: a session's merge and discard commits carry its
// title, which is the project's data; every process of the machine may
// read another's arguments (/proc/<pid>/cmdline), so the message goes to
// git on stdin, never in argv. git is wrapped to log its arguments.
func TestMessageNotInArgv(t *testing.T) {
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "argv.log")
	wrapper := filepath.Join(dir, "git")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	g, ctx := New(wrapper), t.Context()
	r := repo(t)
	for i, op := range []string{"merge", "discard"} {
		branch := "parley/s" + op
		wt := filepath.Join(t.TempDir(), "worktrees", op)
		if _, err := g.Ensure(ctx, r, wt, branch, "main"); err != nil {
			t.Fatal(err)
		}
		write(t, wt, op+".txt", "work\n")
		c := Commit{Author: "Alice", Message: "Parley session: SECRET-TITLE " + op}
		if i == 0 {
			if merged, err := g.Merge(ctx, r, wt, branch, "main", c); err != nil || !merged {
				t.Fatalf("Merge = %v, %v", merged, err)
			}
		} else if err := g.Discard(ctx, r, wt, c); err != nil {
			t.Fatal(err)
		}
		if msgs := git(t, r, "log", "--format=%s", branch, "main"); !strings.Contains(msgs, c.Message) {
			t.Errorf("%s: the commits lack the message %q:\n%s", op, c.Message, msgs)
		}
	}
	if msgs := git(t, r, "log", "-1", "--merges", "--format=%s", "main"); msgs != "Parley session: SECRET-TITLE merge" {
		t.Errorf("the merge commit says %q", msgs)
	}
	argv, _ := os.ReadFile(log)
	if strings.Contains(string(argv), "SECRET-TITLE") {
		t.Errorf("a git command had the session's title in its arguments:\n%s", argv)
	}
}
