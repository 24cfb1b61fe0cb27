package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepositoryProgramsDoNotRun: a repository whose config names a
// clean and smudge filter (one under a driver name holding '=' and a
// dot), a textconv and a monitor, attributed to every file: Parley's git
// stages, diffs and checks out through them and none runs.
func TestRepositoryProgramsDoNotRun(t *testing.T) {
	r := repo(t)
	mark := filepath.Join(t.TempDir(), "ran")
	prog := filepath.Join(t.TempDir(), "evil.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$0 $*\" >> "+mark+"\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r, ".git", "info", "attributes"), []byte("* filter=a=b.c diff=tc\n*.md filter=plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"filter.a=b.c.clean", prog + " clean"}, {"filter.a=b.c.smudge", prog + " smudge"},
		{"filter.a=b.c.required", "true"}, {"filter.plain.process", prog + " process"}, {"diff.tc.textconv", prog + " textconv"},
		{"core.fsmonitor", prog + " fsmonitor"}} {
		git(t, r, "config", kv[0], kv[1])
	}
	write(t, r, "a.txt", "changed\n")
	write(t, r, "b.md", "new\n")
	g := New("")
	ctx := t.Context()
	if _, err := g.run(ctx, r, nil, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.run(ctx, r, nil, "diff", "--no-ext-diff", "--no-textconv", "--cached", "HEAD"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "wt")
	if _, err := g.Ensure(ctx, r, dir, "parley/s1", "main"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mark); err == nil {
		t.Errorf("Parley's git ran what the repository names: %q", strings.Fields(string(b)))
	}
	// The same command without the overrides does run them: the test can fail.
	if _, err := g.exec(ctx, r, nil, "", "diff", "--cached", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Error("git without the overrides ran nothing either: nothing was tested")
	}
}

func TestOverridesKeepKeysWhole(t *testing.T) {
	env := strings.Join(overrides("filter.a=b.c.clean\x00core.bare\x00merge.x.driver\x00"), "\n")
	for _, want := range []string{"GIT_CONFIG_KEY_4=filter.a=b.c.clean\nGIT_CONFIG_VALUE_4=\n", "GIT_CONFIG_KEY_5=merge.x.driver\nGIT_CONFIG_VALUE_5=false", "GIT_CONFIG_COUNT=6"} {
		if !strings.Contains(env+"\n", want) {
			t.Errorf("overrides lack %q:\n%s", want, env)
		}
	}
}
