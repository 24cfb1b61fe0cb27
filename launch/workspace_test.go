package launch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/store"
)

func TestSyncWorkspaceManaged(t *testing.T) {
	data := t.TempDir()
	p := store.Project{ID: 7, Name: "../../etc evil name", ProjectSettings: store.ProjectSettings{
		PermissionMode: "acceptEdits", AllowedTools: []string{"Read", "Bash(git diff:*)"}, DisallowedTools: []string{"WebFetch"},
		Instructions: "Use tabs.\nRun go test before you finish."}}
	dir, err := SyncWorkspace(data, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(data, "projects", "7", "workspace"); dir != want {
		t.Errorf("workspace = %s, want %s (named by id, not by name)", dir, want)
	}
	if fi, err := os.Stat(ConfigDir(data, 7)); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("config dir: %v %v", fi, err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "CLAUDE.md"))
	if want := ClaudeMDMarker + "\nUse tabs.\nRun go test before you finish.\n"; string(md) != want {
		t.Errorf("CLAUDE.md = %q, want %q", md, want)
	}
	// The tool rules are flags now: the CLI reads no settings file (runner's settingsArgs).
	if _, err := os.Stat(filepath.Join(dir, ".claude")); !os.IsNotExist(err) {
		t.Errorf("SyncWorkspace wrote a .claude directory: %v", err)
	}
	// Nothing was created outside the project's directory.
	entries, _ := os.ReadDir(data)
	if len(entries) != 1 || entries[0].Name() != "projects" {
		t.Errorf("data dir holds %v", entries)
	}
}

func TestSyncWorkspaceExistingDirectory(t *testing.T) {
	data, repo := t.TempDir(), t.TempDir()
	own := "# The repository's own CLAUDE.md\n"
	os.WriteFile(filepath.Join(repo, "CLAUDE.md"), []byte(own), 0o644)
	os.MkdirAll(filepath.Join(repo, ".claude"), 0o755)
	os.WriteFile(filepath.Join(repo, ".claude", "settings.local.json"), []byte(`{"env":{"FOO":"1"},"permissions":{"allow":["Old"]}}`), 0o644)
	p := store.Project{ID: 3, Workspace: repo, ProjectSettings: store.ProjectSettings{PermissionMode: "plan", Instructions: "ours"}}
	dir, err := SyncWorkspace(data, p)
	if err != nil || dir != repo {
		t.Fatalf("SyncWorkspace = %s, %v; want %s", dir, err, repo)
	}
	if md, _ := os.ReadFile(filepath.Join(repo, "CLAUDE.md")); string(md) != own {
		t.Errorf("the repository's CLAUDE.md was overwritten: %q", md)
	}
	b, _ := os.ReadFile(filepath.Join(repo, ".claude", "settings.local.json"))
	if want := `{"env":{"FOO":"1"},"permissions":{"allow":["Old"]}}`; string(b) != want {
		t.Errorf("the repository's settings.local.json was changed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(data, "projects", "3", "workspace")); !os.IsNotExist(err) {
		t.Errorf("a managed workspace was made for a project with its own directory: %v", err)
	}
	p.Workspace = filepath.Join(repo, "missing")
	if _, err := SyncWorkspace(data, p); err == nil {
		t.Error("a missing existing directory was accepted")
	}
}

// TestWriteClaudeMDStaysInItsDir: a workspace (or a session's worktree)
// that a run replaced with a link to another project's gets no CLAUDE.md
// written through it, whether the link is absolute or relative; nor does
// a CLAUDE.md that is itself a link.
func TestWriteClaudeMDStaysInItsDir(t *testing.T) {
	data := t.TempDir()
	other := filepath.Join(data, "projects", "2", "workspace")
	os.MkdirAll(other, 0o755)
	theirs := ClaudeMDMarker + "\nProject 2's instructions.\n"
	os.WriteFile(filepath.Join(other, "CLAUDE.md"), []byte(theirs), 0o644)
	worktrees := filepath.Join(data, "projects", "1", "worktrees")
	os.MkdirAll(worktrees, 0o755)
	for _, link := range []string{other, "../../2/workspace"} {
		dir := filepath.Join(worktrees, "s1")
		os.Remove(dir)
		if err := os.Symlink(link, dir); err != nil {
			t.Fatal(err)
		}
		if err := writeClaudeMD(dir, "Project 1's instructions."); err == nil {
			t.Errorf("writeClaudeMD through a link to %s: no error", link)
		}
		if got, _ := os.ReadFile(filepath.Join(other, "CLAUDE.md")); string(got) != theirs {
			t.Fatalf("project 2's CLAUDE.md was written through a link to %s: %q", link, got)
		}
	}
	// A CLAUDE.md that is a link to project 2's is not Parley's to replace.
	mine := filepath.Join(worktrees, "s2")
	os.MkdirAll(mine, 0o755)
	os.Symlink(filepath.Join(other, "CLAUDE.md"), filepath.Join(mine, "CLAUDE.md"))
	if err := writeClaudeMD(mine, "Project 1's instructions."); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(other, "CLAUDE.md")); string(got) != theirs {
		t.Fatalf("project 2's CLAUDE.md was written through a CLAUDE.md link: %q", got)
	}
	// An ordinary directory gets its CLAUDE.md, and again when it changes.
	plain := filepath.Join(worktrees, "s3")
	os.MkdirAll(plain, 0o755)
	for _, text := range []string{"one", "two"} {
		if err := writeClaudeMD(plain, text); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(plain, "CLAUDE.md")); string(got) != ClaudeMDMarker+"\n"+text+"\n" {
			t.Errorf("CLAUDE.md = %q, want the instructions %q", got, text)
		}
	}
	if entries, _ := os.ReadDir(plain); len(entries) != 1 {
		t.Errorf("the worktree holds %v, want only CLAUDE.md (no temporary file left)", entries)
	}
}

func TestClaudeArgs(t *testing.T) {
	full := store.ProjectSettings{Model: "claude-opus-4-1", PermissionMode: "plan",
		AllowedTools: []string{"Read", "Bash(git diff:*)"}, DisallowedTools: []string{"WebFetch", "mcp__parley__ask_user"},
		AppendSystemPrompt: "-be brief", MaxTurns: 12}
	tests := []struct {
		name string
		c    store.ProjectSettings
		ask  bool
		want []string
	}{
		{"defaults", store.ProjectSettings{PermissionMode: "default"}, true, nil},
		{"everything, ask_user on", full, true, []string{"--model", "claude-opus-4-1", "--permission-mode", "plan",
			"--allowedTools", "Read", "Bash(git diff:*)", "mcp__parley__ask_user", "mcp__parley__ask_user_questions",
			"--disallowedTools", "WebFetch", "--max-turns", "12"}},
		{"everything, ask_user off", full, false, []string{"--model", "claude-opus-4-1", "--permission-mode", "plan",
			"--allowedTools", "Read", "Bash(git diff:*)",
			"--disallowedTools", "WebFetch", "mcp__parley__ask_user", "--max-turns", "12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, claudeArgs(tt.c, tt.ask)); d != "" {
				t.Errorf("claudeArgs (-want +got):\n%s", d)
			}
		})
	}
}
