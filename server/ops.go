package server

import (
	"net/http"
)

// handleReady answers 200 once the database answers and its schema is at
// this build's migration, and 503 again once the replica is shutting down
// (draining): a load balancer sends no traffic before, or after.
func (s *Server) handleReady() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.sup != nil && s.sup.Draining() {
			http.Error(w, "not ready: this replica is shutting down", http.StatusServiceUnavailable)
			return
		}
		if err := s.st.Ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}

// handleMetrics serves Prometheus metrics with the metrics token
// (PARLEY_METRICS_TOKEN), or to the loopback clients MetricsLoopback admits.
func (s *Server) handleMetrics() http.Handler {
	if s.metrics == nil {
		return http.NotFoundHandler()
	}
	return s.metrics.Handler(s.cfg.MetricsToken, s.cfg.MetricsLoopback)
}
