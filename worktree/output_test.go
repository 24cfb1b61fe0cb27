package worktree

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A repository the runs write cannot make Parley hold what git prints: a
// command that prints more than maxGitOutput (here a 40 MiB file the run
// committed) fails with errTooMuchOutput, at once, and no more than the
// cap is kept. Before the cap every byte was read into memory.
func TestGitOutputIsCapped(t *testing.T) {
	g, ctx := New(""), t.Context()
	r := repo(t)
	write(t, r, "huge.txt", strings.Repeat("a line of text the run wrote\n", 40<<20/29))
	for _, args := range [][]string{{"add", "huge.txt"}, {"-c", "user.name=run", "-c", "user.email=run@example.com", "commit", "-qm", "huge"}} {
		if out, err := exec.Command("git", append([]string{"-C", r}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	start := time.Now()
	out, err := g.run(ctx, r, nil, "cat-file", "-p", "HEAD:huge.txt")
	if !errors.Is(err, errTooMuchOutput) || len(out) > maxGitOutput {
		t.Fatalf("git cat-file of a 40 MiB file: %d bytes kept, err %v; want at most %d and errTooMuchOutput", len(out), err, maxGitOutput)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the capped command took %v: git was left blocked on its pipe", took)
	}
}
