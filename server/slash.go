package server

import (
	"context"
	"encoding/json"
	"net/http"

	"parley/launch"
	"parley/modeswitch"
	"parley/slash"
	"parley/store"
)

// handleSessionCommands lists the "/" commands the session's composer
// completes, as JSON: the project's own (.claude/commands) and the CLI's
// (its latest system/init event), each with a description.
func (s *Server) handleSessionCommands() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		sess, _, err := s.authorizeSession(ctx, r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		names, err := s.st.SlashCommands(ctx, sess.ID, sess.ProjectID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var project []slash.Command
		if dir, ok := s.commandsDir(ctx, sess); ok {
			project, _ = slash.ProjectCommands(dir) // unreadable: none offered
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(map[string]any{"commands": slash.Merge(project, slash.CLICommands(names))})
	})
}

// commandsDir is where the session's runs work, whose .claude/commands it
// offers: its own worktree, else its project's workspace.
func (s *Server) commandsDir(ctx context.Context, sess store.Session) (string, bool) {
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return "", false
	}
	if wt, err := s.st.SessionWorktree(ctx, sess.ID); err == nil && wt.Branch != "" && wt.State != store.WorktreeDiscarded {
		return launch.WorktreeDir(s.cfg.DataDir, p.ID, sess.ID), true
	}
	return launch.WorkspaceDir(s.cfg.DataDir, p), true
}

// expandCommand turns a prompt "/name args" naming one of the project's
// commands into its text (slash.Expand): the CLI loads none of them, as
// runs read no settings files. Any other prompt is returned as it is.
func (s *Server) expandCommand(ctx context.Context, sess store.Session, text string) string {
	if _, _, ok := slash.Parse(text); !ok {
		return text
	}
	dir, ok := s.commandsDir(ctx, sess)
	if !ok {
		return text
	}
	if out, ok := slash.Expand(dir, text); ok {
		return out
	}
	return text
}

// firstPrompt is a new session's first prompt: a project command expanded
// (from the project's workspace: the session has no worktree yet); a
// "/model NAME" is refused with a sentence, since a switch needs the
// session it switches (its header menu, or /model once it exists).
func (s *Server) firstPrompt(p store.Project, text string) (string, error) {
	if _, ok := modeswitch.TypedModel(text); ok {
		return "", badRequest("Start the session with a message first; then switch its model in the session's header or with /model.")
	}
	if out, ok := slash.Expand(launch.WorkspaceDir(s.cfg.DataDir, p), text); ok {
		return out, nil
	}
	return text, nil
}
