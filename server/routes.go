package server

import (
	"net/http"

	"parley/askuser"
	"parley/limit"
	"parley/reach/reachweb"
	"parley/static"
	"parley/store"
)

// Handler is the whole public URL surface. Every route but the login page,
// static files and the health check needs a sign-in (authenticate), every
// state-changing request a CSRF token (checkCSRF), and each handler checks
// the viewer's role in the project it touches (authorizeSession,
// authorizeProjectAs).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.handleIndex())
	mux.Handle("GET /login", s.handleLoginPage())
	mux.Handle("POST /login", s.handleLogin())
	mux.Handle("POST /logout", s.handleLogout())
	mux.Handle("POST /projects", s.handleProjectCreate())
	mux.Handle("GET /projects/{id}", s.handleProject())
	mux.Handle("POST /projects/{id}/sessions", s.handleSessionCreate())
	mux.Handle("POST /projects/{id}/rename", s.handleProjectRename())
	mux.Handle("POST /projects/{id}/archive", s.handleProjectArchive())
	mux.Handle("POST /projects/{id}/delete", s.handleProjectDelete())
	mux.Handle("GET /projects/{id}/settings", s.handleSettings())
	mux.Handle("POST /projects/{id}/settings", s.handleSettingsSave())
	mux.Handle("POST /projects/{id}/settings/asks", s.handleAskSettingsSave())
	mux.Handle("POST /projects/{id}/settings/members", s.handleMemberAdd())
	mux.Handle("POST /projects/{id}/settings/members/{uid}", s.handleMemberRole())
	mux.Handle("POST /projects/{id}/settings/members/{uid}/remove", s.handleMemberRemove())
	mux.Handle("POST /sessions", s.handleSessionCreate())
	mux.Handle("GET /sessions/{id}", s.handleSession())
	mux.Handle("GET /sessions/{id}/ws", s.handleSessionWS())
	mux.Handle("GET /projects/{id}/history", s.handleHistory())
	mux.Handle("POST /sessions/{id}/rename", s.handleSessionRename())
	mux.Handle("POST /sessions/{id}/archive", s.handleSessionArchive())
	mux.Handle("POST /sessions/{id}/worktree/merge", s.handleWorktree(s.mergeWorktree))
	mux.Handle("POST /sessions/{id}/worktree/discard", s.handleWorktree(s.discardWorktree))
	mux.Handle("GET /sessions/{id}/export.md", s.handleExportMarkdown())
	mux.Handle("GET /sessions/{id}/export.json", s.handleExportJSON())
	mux.Handle("POST /sessions/{id}/attachments", s.handleAttachUpload()) // attach.go
	mux.Handle("GET /attachments/{aid}", s.handleAttachment())
	mux.Handle("POST /attachments/{aid}/remove", s.handleAttachRemove())
	mux.Handle("GET /sessions/{id}/files", s.handleFiles())
	mux.Handle("GET /sessions/{id}/files/view", s.handleFileView())
	mux.Handle("GET /sessions/{id}/files/diff", s.handleFileDiff())
	mux.Handle("GET /sessions/{id}/files/raw", s.handleFileRaw())
	mux.Handle("GET /sessions/{id}/mode", s.handleSessionMode())
	mux.Handle("GET /sessions/{id}/commands", s.handleSessionCommands())
	mux.Handle("GET /inbox", s.handleInbox())
	mux.Handle("GET /inbox/ws", s.handleInboxWS())
	mux.Handle("GET /board/ws", s.handleBoardWS())
	mux.Handle("GET /search", s.handleSearch())
	mux.Handle("GET /projects/{id}/sidebar", s.handleSidebar())
	mux.Handle("GET /projects/{id}/sidebar/ws", s.handleSidebarWS())
	mux.Handle("GET /tokens", s.handleTokens())
	mux.Handle("POST /tokens", s.handleTokenCreate())
	mux.Handle("POST /tokens/{id}/revoke", s.handleTokenRevoke())
	mux.Handle("POST /projects/{id}/settings/mcp", s.handleMCPSettingsSave())
	mux.Handle("GET /audit", s.handleAudit())
	mux.Handle("GET /audit/export", s.handleAuditExport())
	mux.Handle("/mcp", s.mcpCutOff(s.mcp))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	mux.Handle("GET /healthz", s.handleHealth())
	mux.Handle("GET /readyz", s.handleReady())
	mux.Handle("GET /metrics", s.handleMetrics())
	s.reachRoutes(mux)
	s.accountRoutes(mux)
	s.sessionDeleteRoutes(mux) // session_delete.go
	outer := http.NewServeMux()
	outer.Handle("/", s.authenticate(s.checkCSRF(mux)))
	s.tokenRoutes(outer)
	s.oidcRoutes(outer)
	return s.withClient(securityHeaders(limit.Body(defaultBodyBytes, bodyLimitFor, s.tooLarge,
		refuseNUL(s, s.checkOrigin(outer)))))
}

// reachRoutes are a signed-in person's notification settings and push
// devices.
func (s *Server) reachRoutes(mux *http.ServeMux) {
	if s.reach == nil {
		return
	}
	// The devices' handlers are made per request from s.reach.Devices,
	// which may be completed after Handler (a test's Reacher needs the
	// server's URL first).
	d := func(h func(reachweb.Devices) http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(s.reach.Devices).ServeHTTP(w, r) })
	}
	mux.Handle("GET /push/key", d(reachweb.Devices.Key))
	mux.Handle("POST /push/subscriptions", d(reachweb.Devices.Add))
	mux.Handle("DELETE /push/subscriptions/{id}", d(reachweb.Devices.Remove))
	mux.Handle("POST /push/subscriptions/{id}/test", d(reachweb.Devices.Test))
	mux.Handle("GET /notifications", s.handleNotifications())
	mux.Handle("POST /notifications", s.handleNotificationsSave())
	mux.Handle("POST /projects/{id}/settings/reach", s.handleReachSettingsSave())
}

// tokenRoutes need no sign-in: the service worker and the web app
// manifest (a browser fetches the manifest without cookies), and the
// answers that carry an answer token or Slack's signature instead.
func (s *Server) tokenRoutes(mux *http.ServeMux) {
	mux.Handle("GET /sw.js", serviceWorker())
	mux.Handle("GET /manifest.webmanifest", staticFile("manifest.webmanifest", "application/manifest+json"))
	if s.reach == nil {
		return
	}
	a := s.reach.Answers
	mux.Handle("POST /reach/answer", a.Answer())
	mux.Handle("GET /reach/a/{token}", a.Confirm())
	mux.Handle("POST /reach/a/{token}", a.ConfirmPost())
	if s.reach.Slack != nil {
		mux.Handle("POST /slack/interactions/{project}", s.reach.Slack)
	}
}

// serviceWorker serves static/sw.js at the root, so its scope is the
// whole site, and never from a cache: a new Parley's worker replaces the
// old at once.
func serviceWorker() http.Handler {
	h := staticFile("sw.js", "text/javascript; charset=utf-8")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Service-Worker-Allowed", "/")
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// staticFile serves one embedded file with its content type.
func staticFile(name, ctype string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := static.FS.ReadFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(b)
	})
}

// RelayHandler is the internal surface, served on a loopback listener only:
// `parley mcp-askuser` posts asks here with its run's token (the broker
// checks it), never with a sign-in.
func (s *Server) RelayHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /ask", askuser.RelayHandler(s.broker))
	mux.Handle("/mcp-ask", askuser.HTTPHandler(s.broker))
	if s.gw != nil {
		mux.Handle("/", s.gw) // the model gateway: each run's ANTHROPIC_BASE_URL
	}
	return mux
}

// accountRoutes are web administration (admins), a person's own account,
// and the invitation and password-reset links (reachable signed out:
// linkPath).
func (s *Server) accountRoutes(mux *http.ServeMux) {
	mux.Handle("GET /admin/users", s.handleAdminUsers())
	mux.Handle("POST /admin/users/invite", s.handleAdminInvite())
	mux.Handle("POST /admin/users/{uid}/deactivate", s.handleAdminActive(false))
	mux.Handle("POST /admin/users/{uid}/reactivate", s.handleAdminActive(true))
	mux.Handle("POST /admin/users/{uid}/admin", s.handleAdminFlag())
	mux.Handle("POST /admin/users/{uid}/reset", s.handleAdminReset())
	mux.Handle("GET /account", s.handleAccount())
	mux.Handle("POST /account/name", s.handleAccountName())
	mux.Handle("POST /account/password", s.handleAccountPassword())
	mux.Handle("POST /account/sign-out-everywhere", s.handleSignOutEverywhere())
	mux.Handle("GET /invite/{token}", s.handleLinkPage(store.LinkInvite))
	mux.Handle("POST /invite/{token}", s.handleInviteAccept())
	mux.Handle("GET /reset/{token}", s.handleLinkPage(store.LinkReset))
	mux.Handle("POST /reset/{token}", s.handleResetUse())
}
