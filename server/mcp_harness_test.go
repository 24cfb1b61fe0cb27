package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/mcpapi"
)

// apiToken makes an API token for u, as the tokens page does.
func (e *env) apiToken(u *testUser) string {
	e.t.Helper()
	token, hash := NewAPIToken()
	if _, err := e.st.CreateAPIToken(e.t.Context(), u.ID, "test", hash); err != nil {
		e.t.Fatal(err)
	}
	return token
}

// bearerTransport adds an API token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects a go-sdk client to /mcp with token, speaking proto
// ("" = the newest).
func (e *env) mcpConnect(token, proto string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-test", Version: "1.0.0"}, opts)
	return c.Connect(e.t.Context(), &mcp.StreamableClientTransport{Endpoint: e.web.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: proto})
}

func (e *env) mcpClient(token, proto string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	cs, err := e.mcpConnect(token, proto, opts)
	if err != nil {
		e.t.Fatalf("connect to /mcp: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text and whether it is an error
// result; a protocol error fails the test.
func call(t testing.TB, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// callOK calls a tool that must succeed and decodes its result into out.
func callOK(t testing.TB, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	text, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s failed: %s", name, text)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s result %q: %v", name, text, err)
		}
	}
}

// callErr calls a tool that must fail with an error containing want.
func callErr(t testing.TB, cs *mcp.ClientSession, name string, args any, want string) {
	t.Helper()
	text, isErr := call(t, cs, name, args)
	if !isErr || !strings.Contains(text, want) {
		t.Errorf("%s(%v) = %q (error %v), want an error containing %q", name, args, text, isErr, want)
	}
}

// waitStatus re-reads get_status at every change of the session's
// resource until ok accepts it (updates must be subscribed to, on updates).
func waitStatus(t testing.TB, cs *mcp.ClientSession, updates <-chan string, id string, ok func(mcpapi.StatusOutput) bool) mcpapi.StatusOutput {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		var st mcpapi.StatusOutput
		callOK(t, cs, "get_status", map[string]any{"sessionId": id, "outputLines": 50}, &st)
		if ok(st) {
			return st
		}
		select {
		case <-updates:
		case <-deadline:
			t.Fatalf("session %s never reached the wanted status; last: %+v", id, st)
		}
	}
}

// updatesOf returns client options whose resource updates arrive on the
// returned channel.
func updatesOf() (*mcp.ClientOptions, chan string) {
	ch := make(chan string, 1024)
	return &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		select {
		case ch <- r.Params.URI:
		default:
		}
	}}, ch
}
