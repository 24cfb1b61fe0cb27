package server

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// mcpCutOff ends an MCP request that stays open (the streamable HTTP
// transport's GET stream, a tool call waiting on an ask) once its API
// token no longer works: revoked, or its account deactivated. Each request
// is checked when it starts (mcpapi); this re-checks every ping period
// while it lasts, so a deactivated person's MCP client is cut off within
// one, as their open pages are.
func (s *Server) mcpCutOff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			next.ServeHTTP(w, r) // mcpapi refuses it
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.watchToken(ctx, cancel, tokenHash(token))
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
		cancel()
		<-done
	})
}

// watchToken cancels the request when its token stops working. A database
// error is not an end: the check runs again at the next tick.
func (s *Server) watchToken(ctx context.Context, cancel context.CancelFunc, hash []byte) {
	tick := time.NewTicker(s.pingEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			cctx, ccancel := context.WithTimeout(ctx, writeWait)
			live, err := s.st.APITokenLive(cctx, hash)
			ccancel()
			if err == nil && !live {
				s.log.Info("mcp request cut off: its API token no longer works")
				cancel()
				return
			}
		}
	}
}
