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
