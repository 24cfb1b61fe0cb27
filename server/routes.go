package server

import (
	"net/http"

	"parley/askuser"
	"parley/static"
)

// Handler is the whole public URL surface.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", s.handleIndex())
	mux.Handle("POST /sessions", s.handleSessionCreate())
	mux.Handle("GET /sessions/{id}", s.handleSession())
	mux.Handle("GET /sessions/{id}/ws", s.handleSessionWS())
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	mux.Handle("GET /healthz", s.handleHealth())
	return s.checkOrigin(mux)
}

// RelayHandler is the internal surface, served on a loopback listener only:
// `parley mcp-askuser` posts asks here with its run's token.
func (s *Server) RelayHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /ask", askuser.RelayHandler(s.broker))
	return mux
}
