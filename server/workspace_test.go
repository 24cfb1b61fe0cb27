package server

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/runner/fakeapi"
	"parley/store"
	"parley/views"
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
	if want := claudeMDMarker + "\nUse tabs.\nRun go test before you finish.\n"; string(md) != want {
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
	theirs := claudeMDMarker + "\nProject 2's instructions.\n"
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
		if got, _ := os.ReadFile(filepath.Join(plain, "CLAUDE.md")); string(got) != claudeMDMarker+"\n"+text+"\n" {
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

func TestRunOptionsFromProject(t *testing.T) {
	for _, tt := range []struct {
		name          string
		serverAsk     bool
		projectAsk    bool
		timeout       int
		permTimeout   int
		wantRelay     bool
		wantAskExpiry time.Duration
	}{
		{"ask on", true, true, 0, 0, true, 300 * time.Second},
		{"project timeout", true, true, 45, 600, true, 45 * time.Second},
		{"project ask off", true, false, 0, 0, false, 300 * time.Second},
		{"server ask off", false, true, 0, 0, false, 300 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, askUserOff: !tt.serverAsk})
			c := store.ProjectSettings{Model: "sonnet", PermissionMode: "acceptEdits", AskUserEnabled: tt.projectAsk,
				AskTimeoutSeconds: tt.timeout, PermissionTimeoutSeconds: tt.permTimeout, MaxTurns: 3}
			if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, c, ""); err != nil {
				t.Fatal(err)
			}
			o, err := e.srv.runOptions(t.Context(), e.newSession())
			if err != nil {
				t.Fatal(err)
			}
			if (o.RelayURL != "") != tt.wantRelay || o.AskTimeout != tt.wantAskExpiry {
				t.Errorf("relay %q, ask timeout %v; want relay %v, %v", o.RelayURL, o.AskTimeout, tt.wantRelay, tt.wantAskExpiry)
			}
			if want := time.Duration(tt.permTimeout) * time.Second; o.PermissionTimeout != want {
				t.Errorf("permission timeout %v, want %v (0 = no deadline)", o.PermissionTimeout, want)
			}
			if want := []string{"--model", "sonnet", "--permission-mode", "acceptEdits", "--max-turns", "3"}; !cmp.Equal(o.ExtraArgs, want) {
				t.Errorf("extra args %q, want %q", o.ExtraArgs, want)
			}
			id := strconv.FormatInt(e.project.ID, 10)
			if o.Workspace != filepath.Join(e.dataDir, "projects", id, "workspace") || o.ConfigDir != filepath.Join(e.dataDir, "projects", id, "claude") {
				t.Errorf("workspace %s, config dir %s", o.Workspace, o.ConfigDir)
			}
		})
	}
}

func TestParseSettings(t *testing.T) {
	ok := views.SettingsForm{Model: "claude-sonnet-4-5[1m]", PermissionMode: "bypassPermissions",
		AllowedTools: "Read\n  Bash(git diff:*)\n\nRead\n", MaxTurns: "10", AskTimeout: "900", AskUserEnabled: true}
	c, errs := parseSettings(ok)
	if len(errs) != 0 {
		t.Fatalf("valid settings refused: %v", errs)
	}
	if !cmp.Equal(c.AllowedTools, []string{"Read", "Bash(git diff:*)"}) || c.MaxTurns != 10 || c.AskTimeoutSeconds != 900 {
		t.Errorf("parsed %+v", c)
	}
	for field, f := range map[string]views.SettingsForm{
		"model":              {Model: "--dangerously-skip-permissions", PermissionMode: "default"},
		"permission_mode":    {PermissionMode: "yolo"},
		"allowed_tools":      {PermissionMode: "default", AllowedTools: "Read\n--model=x"},
		"disallowed_tools":   {PermissionMode: "default", DisallowedTools: "Bash(rm (nested))"},
		"max_turns":          {PermissionMode: "default", MaxTurns: "-1"},
		"ask_timeout":        {PermissionMode: "default", AskTimeout: "29"},
		"permission_timeout": {PermissionMode: "default", PermissionTimeout: "86401"},
		"instructions":       {PermissionMode: "default", Instructions: strings.Repeat("x", maxInstructions+1)},
	} {
		if _, errs := parseSettings(f); errs[field] == "" || len(errs) != 1 {
			t.Errorf("%s: errors %v, want one for the field", field, errs)
		}
	}
}

// TestSettingsPage: an owner saves settings; the workspace files follow,
// refused values are shown next to their fields and change nothing, and
// only an admin may point the project at an existing directory.
func TestSettingsPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga", roleOwner)
	admin := e.addUser("admin@example.com", "Ada", true)
	path := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings"
	form := url.Values{"model": {"opus"}, "permission_mode": {"plan"}, "allowed_tools": {"Read"},
		"instructions": {"Answer in French."}, "ask_user_enabled": {"1"}, "ask_timeout": {"60"}, "permission_timeout": {"120"}, "workspace": {"/"}}
	if resp := e.postAs(owner, path, form); resp.StatusCode != 303 {
		t.Fatalf("save: %d", resp.StatusCode)
	}
	p, _ := e.st.GetProject(t.Context(), e.project.ID)
	if p.Model != "opus" || p.PermissionMode != "plan" || p.AskTimeoutSeconds != 60 || p.PermissionTimeoutSeconds != 120 || p.Workspace != "" {
		t.Errorf("saved %+v (an owner's workspace field is ignored)", p)
	}
	md, _ := os.ReadFile(filepath.Join(WorkspaceDir(e.dataDir, p), "CLAUDE.md"))
	if !strings.Contains(string(md), "Answer in French.") {
		t.Errorf("CLAUDE.md = %q", md)
	}
	bad := url.Values{"model": {"x y"}, "permission_mode": {"plan"}, "ask_timeout": {"5000"}}
	resp := e.postAs(owner, path, bad)
	body := readBody(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(body, `id="model-error"`) || !strings.Contains(body, `id="ask_timeout-error"`) {
		t.Errorf("refused save: %d\n%s", resp.StatusCode, body)
	}
	if p2, _ := e.st.GetProject(t.Context(), e.project.ID); p2.Model != "opus" {
		t.Errorf("a refused save changed the model to %q", p2.Model)
	}
	repo := t.TempDir()
	form.Set("workspace", repo)
	form.Del(csrfField) // the owner's
	if resp := e.postAs(admin, path, form); resp.StatusCode != 303 {
		t.Fatalf("admin save: %d %s", resp.StatusCode, readBody(resp.Body))
	}
	if p, _ = e.st.GetProject(t.Context(), e.project.ID); p.Workspace != repo {
		t.Errorf("workspace = %q, want %q", p.Workspace, repo)
	}
	for _, dir := range []string{"relative/dir", repo + "/../x", e.dataDir, filepath.Join(e.dataDir, "projects"), "/no/such/dir"} {
		form.Set("workspace", dir)
		form.Del(csrfField)
		if resp := e.postAs(admin, path, form); resp.StatusCode != 400 {
			t.Errorf("workspace %q accepted: %d", dir, resp.StatusCode)
		}
	}
}

func readBody(resp interface{ Read([]byte) (int, error) }) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
