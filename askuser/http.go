package askuser

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPHandler serves ask_user and ask_user_questions over MCP's streamable
// HTTP transport, for runs whose claude reaches them at Parley's own
// endpoint instead of a `parley mcp-askuser` child. Every request must
// carry "Authorization: Bearer <token>" of a run registered on b (403
// otherwise, so an MCP session cannot outlive its run); each call asks that
// run's [Asker], like [RelayHandler]. A waiting call sends progress every
// 10 s: measured on claude 2.1.328, a streamable HTTP tool call fails at
// 60 s unless the server sends progress, and the server's handler is then
// not even cancelled (shared/claude-cli.md).
func HTTPHandler(b *Broker) http.Handler {
	return httpHandler(b, heartbeatInterval)
}

func httpHandler(b *Broker, heartbeat time.Duration) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		reg, ok := b.registration(bearerToken(r))
		if !ok {
			return nil
		}
		return newServer(&askTool{asker: reg.asker, heartbeat: heartbeat, cfg: reg.cfg})
	}, &mcp.StreamableHTTPOptions{SessionTimeout: time.Hour})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := b.asker(bearerToken(r)); !ok {
			http.Error(w, "unknown or ended run token", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
