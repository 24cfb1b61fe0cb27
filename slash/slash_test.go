package slash

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// workspace makes a workspace with the given files (path → content).
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestProjectCommands names commands by path as the CLI does, reads the
// description from front matter or the first line, and follows no link:
// a command file or folder that is a symbolic link (here to a secret
// outside the workspace) is not offered and not read.
func TestProjectCommands(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(secret, []byte("---\ndescription: TOP SECRET\n---\n"), 0o644)
	ws := workspace(t, map[string]string{
		".claude/commands/deploy.md":   "---\ndescription: Deploy the app\nallowed-tools: Bash(rm:*)\n---\nDeploy now: $ARGUMENTS\n",
		".claude/commands/sub/lint.md": "# Run the linter\n\nlint everything\n",
		".claude/commands/notes.txt":   "not a command",
		".claude/commands/big.md":      strings.Repeat("x", maxFileBytes+1),
	})
	os.Symlink(secret, filepath.Join(ws, ".claude/commands/leak.md"))
	os.Symlink(filepath.Dir(secret), filepath.Join(ws, ".claude/commands/outside"))
	got, err := ProjectCommands(ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Name: "deploy", Description: "Deploy the app", Source: "project"},
		{Name: "sub:lint", Description: "Run the linter", Source: "project"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ProjectCommands (-want +got):\n%s", diff)
	}
	if cmds, err := ProjectCommands(filepath.Join(t.TempDir(), "none")); err != nil || len(cmds) != 0 {
		t.Errorf("a workspace without commands: %v, %v", cmds, err)
	}
	// .claude itself a link to a folder of commands: nothing offered.
	ws2 := filepath.Join(t.TempDir(), "ws2")
	os.MkdirAll(ws2, 0o755)
	os.Symlink(filepath.Join(ws, ".claude"), filepath.Join(ws2, ".claude"))
	if cmds, _ := ProjectCommands(ws2); len(cmds) != 0 {
		t.Errorf("commands through a linked .claude: %v", cmds)
	}
}

// TestExpand replaces $ARGUMENTS (or appends them), keeps only the body,
// and refuses names that are paths or links.
func TestExpand(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(secret, []byte("the secret"), 0o644)
	ws := workspace(t, map[string]string{
		".claude/commands/deploy.md":   "---\ndescription: Deploy\nmodel: opus\n---\nDeploy now: $ARGUMENTS\n",
		".claude/commands/sub/lint.md": "Run the linter\n",
	})
	os.Symlink(secret, filepath.Join(ws, ".claude/commands/leak.md"))
	tests := []struct {
		text, want string
		ok         bool
	}{
		{"/deploy prod", "/deploy prod\n\nDeploy now: prod", true},
		{"/sub:lint fast", "/sub:lint fast\n\nRun the linter\n\nARGUMENTS: fast", true},
		{"/leak", "", false},
		{"/../deploy", "", false},
		{"/sub/lint", "", false},
		{"/missing x", "", false},
		{"hello /deploy", "", false},
	}
	for _, tt := range tests {
		got, ok := Expand(ws, tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Expand(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}
