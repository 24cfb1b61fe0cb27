package server

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/act"
	"parley/audit"
	"parley/launch"
	"parley/store"
	"parley/views"
)

// Bounds of the settings a project owner types.
const (
	maxSystemPrompt   = 16 << 10
	maxInstructions   = 64 << 10
	maxToolRules      = 100
	maxToolRule       = 200
	maxMaxTurns       = 1000
	minAskTimeoutSec  = 30
	maxAskTimeoutSec  = 900
	maxPermTimeoutSec = 86400
)

var (
	modelPattern    = act.ModelName // act/names.go, shared with MCP create_session
	toolPattern     = act.ToolName
	permissionModes = act.PermissionModes
)

func (s *Server) handleSettings() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		sv, err := s.withLimits(r.Context(), p, s.settingsView(p, v, formOf(p)))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		sv.Saved = r.URL.Query().Get("saved") == "1"
		if sv.Asks, err = s.askSettingsForm(r.Context(), p.ID); err != nil {
			s.fail(w, r, err)
			return
		}
		sv.Asks.Saved = r.URL.Query().Get("saved") == "asks"
		s.renderSettings(w, r, http.StatusOK, sv)
	})
}

func (s *Server) handleSettingsSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f := views.SettingsForm{
			Model: strings.TrimSpace(r.PostFormValue("model")), PermissionMode: r.PostFormValue("permission_mode"),
			AllowedTools: r.PostFormValue("allowed_tools"), DisallowedTools: r.PostFormValue("disallowed_tools"),
			AppendSystemPrompt: r.PostFormValue("append_system_prompt"), Instructions: r.PostFormValue("instructions"),
			MaxTurns: strings.TrimSpace(r.PostFormValue("max_turns")), AskTimeout: strings.TrimSpace(r.PostFormValue("ask_timeout")),
			PermissionTimeout: strings.TrimSpace(r.PostFormValue("permission_timeout")),
			AskUserEnabled:    r.PostFormValue("ask_user_enabled") != "", Workspace: strings.TrimSpace(r.PostFormValue("workspace")),
		}
		c, errs := parseSettings(f)
		if msg := modeRefusal(c, s.runEUID(), os.Getenv); msg != "" {
			errs["permission_mode"] = msg
		}
		limits, lf := parseLimits(r, errs)
		runLimits, rf := s.parseRunLimits(r, p.ID, v.Admin, errs)
		workspace := p.Workspace
		if v.Admin {
			if msg := s.checkWorkspace(f.Workspace); msg != "" {
				errs["workspace"] = msg
			}
			workspace = f.Workspace
		}
		if len(errs) > 0 {
			sv, _ := s.withLimits(r.Context(), p, s.settingsView(p, v, f))
			sv.Errors, sv.Limits = errs, lf
			sv.Run.Form = rf
			s.renderSettings(w, r, http.StatusBadRequest, sv)
			return
		}
		if err := s.st.UpdateProjectSettings(r.Context(), p.ID, c, workspace); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.st.SetProjectLimits(r.Context(), p.ID, limits); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.st.SetProjectRunLimits(r.Context(), p.ID, runLimits); err != nil {
			s.fail(w, r, err)
			return
		}
		p.ProjectSettings, p.Workspace = c, workspace
		s.warm.Recheck() // processes started ahead with the old settings end now
		s.record(r, audit.Entry{Action: audit.ProjectSettings, ProjectID: p.ID, Target: "settings", Detail: map[string]any{"settings": c, "workspace": workspace, "limits": limits, "run_limits": runLimits}})
		if _, err := launch.SyncWorkspace(s.cfg.DataDir, p); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, settingsPath(p.ID)+"?saved=1", http.StatusSeeOther)
	})
}

// parseSettings checks the form; errs names each refused field.
func parseSettings(f views.SettingsForm) (store.ProjectSettings, map[string]string) {
	errs := map[string]string{}
	c := store.ProjectSettings{Model: f.Model, PermissionMode: f.PermissionMode, AskUserEnabled: f.AskUserEnabled,
		AppendSystemPrompt: strings.TrimSpace(f.AppendSystemPrompt), Instructions: strings.TrimSpace(f.Instructions)}
	if c.Model != "" && !modelPattern.MatchString(c.Model) {
		errs["model"] = "A model is a name such as claude-sonnet-4-5 or opus: letters, digits and . _ - : only."
	}
	if !slices.Contains(permissionModes, c.PermissionMode) {
		errs["permission_mode"] = "Pick one of the permission modes listed."
	}
	var msg string
	if c.AllowedTools, msg = parseToolRules(f.AllowedTools); msg != "" {
		errs["allowed_tools"] = msg
	}
	if c.DisallowedTools, msg = parseToolRules(f.DisallowedTools); msg != "" {
		errs["disallowed_tools"] = msg
	}
	if len(c.AppendSystemPrompt) > maxSystemPrompt || !utf8.ValidString(c.AppendSystemPrompt) || strings.ContainsRune(c.AppendSystemPrompt, 0) {
		errs["append_system_prompt"] = "At most 16 KB of text."
	}
	if len(c.Instructions) > maxInstructions || !utf8.ValidString(c.Instructions) || strings.ContainsRune(c.Instructions, 0) {
		errs["instructions"] = "At most 64 KB of text."
	}
	if f.MaxTurns != "" {
		n, err := strconv.Atoi(f.MaxTurns)
		if err != nil || n < 0 || n > maxMaxTurns {
			errs["max_turns"] = "A whole number from 0 (no limit) to 1000."
		}
		c.MaxTurns = n
	}
	if f.AskTimeout != "" {
		n, err := strconv.Atoi(f.AskTimeout)
		if err != nil || n < minAskTimeoutSec || n > maxAskTimeoutSec {
			errs["ask_timeout"] = "A whole number of seconds from 30 to 900, or empty for the server's default."
		}
		c.AskTimeoutSeconds = n
	}
	if f.PermissionTimeout != "" {
		n, err := strconv.Atoi(f.PermissionTimeout)
		if err != nil || n < minAskTimeoutSec || n > maxPermTimeoutSec {
			errs["permission_timeout"] = "A whole number of seconds from 30 to 86400, or empty to wait without a deadline."
		}
		c.PermissionTimeoutSeconds = n
	}
	return c, errs
}

// parseToolRules reads one permission rule a line.
func parseToolRules(text string) ([]string, string) {
	var rules []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(line) > maxToolRule || !toolPattern.MatchString(line) {
			return nil, "“" + truncate(line, 60) + "” is not a tool rule: write a tool name such as Read or mcp__server__tool, optionally with a rule in parentheses such as Bash(git diff:*)."
		}
		if !slices.Contains(rules, line) {
			rules = append(rules, line)
		}
	}
	if len(rules) > maxToolRules {
		return nil, "At most 100 rules."
	}
	return rules, ""
}

// checkWorkspace says why a project may not use dir as its existing
// directory ("" = it may; an empty dir means the managed one).
func (s *Server) checkWorkspace(dir string) string {
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return "Give an absolute path without . or .. parts, like /srv/checkouts/app."
	}
	if dir == "/" {
		return "Claude may not work in the root directory."
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "There is no directory at this path on the server."
	}
	data, err := filepath.Abs(s.cfg.DataDir)
	if err == nil {
		if rel, err := filepath.Rel(data, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return "This path is inside Parley's data directory; pick a directory outside it."
		}
		if rel, err := filepath.Rel(dir, data); err == nil && !strings.HasPrefix(rel, "..") {
			return "Parley's data directory is inside this path; pick a directory that does not hold it."
		}
	}
	return ""
}

// formOf is the settings form showing a project's stored settings.
func formOf(p store.Project) views.SettingsForm {
	f := views.SettingsForm{Model: p.Model, PermissionMode: p.PermissionMode,
		AllowedTools: strings.Join(p.AllowedTools, "\n"), DisallowedTools: strings.Join(p.DisallowedTools, "\n"),
		AppendSystemPrompt: p.AppendSystemPrompt, Instructions: p.Instructions,
		AskUserEnabled: p.AskUserEnabled, Workspace: p.Workspace}
	if p.MaxTurns > 0 {
		f.MaxTurns = strconv.Itoa(p.MaxTurns)
	}
	if p.PermissionTimeoutSeconds > 0 {
		f.PermissionTimeout = strconv.Itoa(p.PermissionTimeoutSeconds)
	}
	if p.AskTimeoutSeconds > 0 {
		f.AskTimeout = strconv.Itoa(p.AskTimeoutSeconds)
	}
	return f
}

func (s *Server) settingsView(p store.Project, v viewer, f views.SettingsForm) views.SettingsView {
	return views.SettingsView{ProjectID: p.ID, Name: p.Name, Archived: p.ArchivedAt != nil, Admin: v.Admin, Form: f,
		AskUserOffServer: !s.cfg.AskUserEnabled, DefaultAskTimeout: int(s.cfg.AskTimeout.Seconds()),
		WorkspaceDir: launch.WorkspaceDir(s.cfg.DataDir, p)}
}

// renderSettings renders the settings page with the project's members.
func (s *Server) renderSettings(w http.ResponseWriter, r *http.Request, status int, sv views.SettingsView) {
	members, err := s.st.Members(r.Context(), sv.ProjectID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, m := range members {
		sv.Members = append(sv.Members, views.MemberRow{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: m.Role})
	}
	if sv.MCP, err = s.mcpSettingsView(r.Context(), sv.ProjectID); err != nil {
		s.fail(w, r, err)
		return
	}
	if sv.Reach == nil {
		if sv.Reach, err = s.reachSettingsView(r, sv.ProjectID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if sv.Retention == nil {
		if sv.Retention, err = s.retentionForm(r, sv.ProjectID); err != nil { // session_delete.go
			s.fail(w, r, err)
			return
		}
	}
	u, err := s.st.ProjectUsage(r.Context(), sv.ProjectID, 30)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sv.Usage = views.Usage{Requests: u.Requests, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Limited: u.Limited}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.SettingsPage(sv).Render(r.Context(), w)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
