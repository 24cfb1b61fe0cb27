package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/audit"
	"parley/store"
	"parley/views"
)

// apiTokenPrefix marks Parley's API tokens, so a leaked one is recognisable.
const apiTokenPrefix = "prl_"

// NewAPIToken returns a fresh API token and its SHA-256, which is all
// Parley stores.
func NewAPIToken() (token string, hash []byte) {
	token = apiTokenPrefix + randomToken()
	return token, tokenHash(token)
}

// handleTokens is the page of the viewer's own API tokens.
func (s *Server) handleTokens() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderTokens(w, r, http.StatusOK, views.TokensView{})
	})
}

// handleTokenCreate makes a token and shows it, once.
func (s *Server) handleTokenCreate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		name := strings.TrimSpace(r.PostFormValue("name"))
		if name == "" || utf8.RuneCountInString(name) > 100 {
			s.renderTokens(w, r, http.StatusBadRequest, views.TokensView{Error: "Give the token a name of 1 to 100 characters, to tell it apart later."})
			return
		}
		token, hash := NewAPIToken()
		t, err := s.st.CreateAPIToken(r.Context(), v.ID, name, hash)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.TokenCreate, Target: name, Detail: map[string]any{"token_id": t.ID}})
		// The page is the response to the POST: a reload does not show the
		// token again, and it is never in a URL or a log.
		w.Header().Set("Cache-Control", "no-store")
		s.renderTokens(w, r, http.StatusOK, views.TokensView{NewToken: token, NewName: name})
	})
}

// handleTokenRevoke revokes one of the viewer's tokens at once.
func (s *Server) handleTokenRevoke() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			s.fail(w, r, errNotFound)
			return
		}
		err = s.st.RevokeAPIToken(r.Context(), id, s.viewer(r).ID)
		s.recordOK(err, r, audit.Entry{Action: audit.TokenRevoke, Target: r.PathValue("id"), Detail: map[string]any{"token_id": id}})
		if errors.Is(err, store.ErrNotFound) {
			err = errNotFound
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/tokens", http.StatusSeeOther)
	})
}

func (s *Server) renderTokens(w http.ResponseWriter, r *http.Request, status int, tv views.TokensView) {
	list, err := s.st.APITokens(r.Context(), s.viewer(r).ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, t := range list {
		row := views.TokenRow{ID: t.ID, Name: t.Name, Created: t.CreatedAt.Format("2006-01-02 15:04"), Revoked: t.RevokedAt != nil}
		if t.LastUsedAt != nil {
			row.LastUsed = t.LastUsedAt.Format("2006-01-02 15:04")
		}
		tv.Tokens = append(tv.Tokens, row)
	}
	tv.MCPURL = mcpURL(r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.TokensPage(tv).Render(r.Context(), w)
}

// mcpURL is the /mcp endpoint as the request reached this server.
func mcpURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

// handleMCPSettingsSave stores a project's MCP options (owners).
func (s *Server) handleMCPSettingsSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, badRequest("The form could not be read."))
			return
		}
		m := store.MCPSettings{AskTransport: r.PostFormValue("ask_transport")}
		for _, mode := range r.PostForm["member_modes"] {
			if !slices.Contains(permissionModes, mode) {
				s.fail(w, r, badRequest("Unknown permission mode "+quote(mode)+"."))
				return
			}
			m.MemberPermissionModes = append(m.MemberPermissionModes, mode)
		}
		if m.AskTransport != "stdio" && m.AskTransport != "http" {
			s.fail(w, r, badRequest("Choose how Claude reaches ask_user: stdio or http."))
			return
		}
		if err := s.st.SetProjectMCPSettings(r.Context(), p.ID, m); err != nil {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.ProjectSettings, ProjectID: p.ID, Target: "mcp", Detail: map[string]any{"mcp": m}})
		s.warm.Recheck() // processes started ahead with the old transport end now
		http.Redirect(w, r, settingsPath(p.ID)+"?saved=1", http.StatusSeeOther)
	})
}

// mcpSettingsView is the project's MCP options for its settings page.
func (s *Server) mcpSettingsView(ctx context.Context, projectID int64) (views.MCPSettingsView, error) {
	m, err := s.st.ProjectMCPSettings(ctx, projectID)
	if err != nil {
		return views.MCPSettingsView{}, err
	}
	v := views.MCPSettingsView{MemberModes: map[string]bool{}, AskTransport: m.AskTransport}
	for _, mode := range m.MemberPermissionModes {
		v.MemberModes[mode] = true
	}
	return v, nil
}
