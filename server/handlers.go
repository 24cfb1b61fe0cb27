package server

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"

	"parley/act"
	"parley/views"
)

// maxPromptBytes bounds one prompt.
const maxPromptBytes = views.MaxPromptBytes

func (s *Server) handleSession() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, v, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		// The project is in use: keep a process ahead for its next session,
		// for someone who may start one (a viewer's visits start nothing).
		if s.warm != nil {
			if _, err := s.checkAccess(r.Context(), v, sess.ProjectID, actPrompt); err == nil {
				s.warm.Touch(sess.ProjectID)
			}
		}
		s.renderSession(w, r, sess, pageNote{Done: r.URL.Query().Get("worktree")})
	})
}

func (s *Server) handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.st.LastSeq(r.Context(), "00000000-0000-0000-0000-000000000000"); err != nil {
			http.Error(w, "database unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// checkPrompt trims a prompt and refuses empty or oversized ones.
func checkPrompt(text string) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", badRequest("Write something for Claude first.")
	case len(text) > maxPromptBytes:
		return "", errTooBig(int64(len(text)), maxPromptBytes)
	case !utf8.ValidString(text):
		return "", errInvalidUTF8
	case strings.IndexByte(text, 0) >= 0:
		return "", errNUL
	}
	return text, nil
}

// title makes a session title from its first prompt (act.Title).
func title(text string) string { return act.Title(text) }

func render(w http.ResponseWriter, r *http.Request, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = c.Render(r.Context(), w)
}
