// Package mcpapi is Parley as an MCP server: agents and editors start
// sessions, follow them and answer their asks with the same rules as the
// web pages. It speaks streamable HTTP at /mcp (an API token as
// "Authorization: Bearer") and, through [Proxy], stdio for `parley mcp`.
//
// The package holds the protocol, not the rules: every tool calls
// [Sessions], which the web server implements with the code its own
// handlers use, so authorization, validation and the effects of a prompt,
// an answer or a stop are the page's.
package mcpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// User is who a token acts for.
type User struct {
	ID    int64
	Name  string // shown to others as the author of prompts, answers and stops
	Admin bool
}

// Sessions is what the tools do. Each method authorizes u exactly as the
// web pages would (a session outside u's projects is [ErrNotFound]; a role
// too low is a [*Error] saying so) and returns errors a client may read:
// a [*Error] is shown as it is, anything else as a generic failure.
// Declared here because this package consumes it; the server implements it.
type Sessions interface {
	CreateSession(ctx context.Context, u User, in CreateSessionInput) (CreateSessionOutput, error)
	SendMessage(ctx context.Context, u User, in SendMessageInput) (SendMessageOutput, error)
	Status(ctx context.Context, u User, in GetStatusInput) (StatusOutput, error)
	Respond(ctx context.Context, u User, in RespondInput) error
	Interrupt(ctx context.Context, u User, sessionID string) error
	ListSessions(ctx context.Context, u User, in ListSessionsInput) (ListSessionsOutput, error)
	// Watch reports changes of the session's log on the returned channel
	// (a value per change, dropped when the reader is behind) until ctx
	// ends; then the channel is closed.
	Watch(ctx context.Context, u User, sessionID string) (<-chan struct{}, error)
}

// Authenticate returns the user of an API token, or an error wrapping
// [ErrBadToken] for a token that is unknown or revoked.
type Authenticate func(ctx context.Context, token string) (User, error)

// ErrBadToken is the cause of a refused token.
var ErrBadToken = errors.New("unknown or revoked API token")

// ErrNotFound is what a caller sees of a session or project that does not
// exist or that it may not see: the two are never told apart.
var ErrNotFound = &Error{Msg: "No such session or project, or you do not have access to it."}

// Error is a refusal with a sentence for the client, naming the field at
// fault when there is one.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Msg
	}
	return e.Msg
}

// FieldError is an [*Error] about one input field.
func FieldError(field, format string, args ...any) error {
	return &Error{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Server is Parley's MCP server.
type Server struct {
	sessions Sessions
	auth     Authenticate
	log      *slog.Logger
	mcp      *mcp.Server
	watch    *watchers
	elicit   *elicitor
}

// New returns a Server whose tools call s and whose requests are
// authenticated by a. ctx bounds the watchers that feed subscriptions.
func New(ctx context.Context, s Sessions, a Authenticate, log *slog.Logger) *Server {
	srv := &Server{sessions: s, auth: a, log: log}
	srv.watch = newWatchers(ctx, srv)
	srv.elicit = newElicitor(srv)
	srv.mcp = mcp.NewServer(&mcp.Implementation{Name: "parley", Title: "Parley", Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions:       instructions,
		SubscribeHandler:   srv.subscribe,
		UnsubscribeHandler: srv.unsubscribe,
		Logger:             quiet(log),
	})
	srv.addTools()
	srv.addResources()
	return srv
}

const instructions = `Parley runs Claude Code sessions for teams. create_session starts one in a project; the people of the project watch it live in Parley's web chat and may answer its asks too. Follow a session with get_status or by subscribing to its resource parley://sessions/{id}; answer its pendingInputs with respond (the first answer wins, from here or from the page).`

// Handler serves MCP's streamable HTTP transport. Every request must carry
// a live API token ("Authorization: Bearer <token>"), checked anew each
// time, so a revoked token fails at once.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:         quiet(s.log),
		SessionTimeout: 30 * time.Minute,
		// The SDK's DNS rebinding check refuses a request that reaches a
		// loopback address with another Host, which is every request through
		// a TLS proxy on the same machine. It guards servers without
		// authentication; here every request needs a bearer token, which a
		// rebound page does not have, and the web server refuses a
		// cross-site Origin before /mcp is reached.
		DisableLocalhostProtection: true,
	})
	return auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// verify is the token check of every request. TokenInfo.UserID lets the
// transport refuse a session's requests made with another user's token.
func (s *Server) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	u, err := s.auth(ctx, token)
	if errors.Is(err, ErrBadToken) {
		return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, err)
	}
	if err != nil {
		return nil, err
	}
	return &auth.TokenInfo{UserID: fmt.Sprint(u.ID), Extra: map[string]any{userKey: u}}, nil
}

const userKey = "parley_user"

// userOf returns the user a request was authenticated as.
func userOf(extra *mcp.RequestExtra) (User, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return User{}, false
	}
	u, ok := extra.TokenInfo.Extra[userKey].(User)
	return u, ok
}

// quiet passes on the SDK's warnings and errors only: it logs every
// session and notification at Info.
func quiet(l *slog.Logger) *slog.Logger { return slog.New(minLevel{l.Handler(), slog.LevelWarn}) }

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{m.Handler.WithGroup(n), m.min} }
