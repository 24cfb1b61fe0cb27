package server

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/mcpapi"
	"parley/runner/fakeapi"
)

// mcpStdio connects a go-sdk client over stdio to `parley mcp`'s proxy
// (mcpapi.Proxy, run here on pipes) relaying to this env's /mcp.
func (e *env) mcpStdio(token, proto string, opts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	clientIn, proxyOut := io.Pipe()
	proxyIn, clientOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpapi.Proxy(ctx, e.web.URL+"/mcp", token, proxyIn, proxyOut) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-stdio-test", Version: "1.0.0"}, opts)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		cancel()
		e.t.Fatalf("connect over stdio: %v", err)
	}
	e.t.Cleanup(func() {
		cs.Close()
		cancel()
		clientOut.Close()
		if err := <-done; err != nil {
			e.t.Errorf("parley mcp: %v", err)
		}
	})
	return cs
}

// TestMCPStdioElicitation drives a session through `parley mcp` (stdio) with
// a client that declared elicitation: the session's ask_user question
// reaches the client as elicitation/create and its answer goes to the
// model; the next ask is answered first by a teammate in the page, and the
// client's elicitation is cancelled.
func TestMCPStdioElicitation(t *testing.T) {
	size := map[string]any{"question": "Which size?", "options": []map[string]string{{"label": "Small"}, {"label": "Large"}}}
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)}, {Text: "Colour: {{tool_result}}"},
		{ToolName: askTool, ToolInput: size}, {Text: "Size: {{tool_result}}"},
	}, envOptions{})
	elicited := make(chan *mcp.ElicitRequest, 4)
	cancelled := make(chan struct{})
	opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		elicited <- r
		if strings.Contains(r.Params.Message, "Which colour?") {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"q0": "Blue"}}, nil
		}
		<-ctx.Done() // a teammate answers in the page meanwhile
		close(cancelled)
		return nil, ctx.Err()
	}}
	cs := e.mcpStdio(e.apiToken(e.user), "2025-11-25", opts)

	var created mcpapi.CreateSessionOutput
	callOK(t, cs, "create_session", map[string]any{"project": "Test project", "prompt": "Pick a colour."}, &created)
	select {
	case r := <-elicited:
		if !strings.Contains(r.Params.Message, "Which colour?") {
			t.Errorf("elicitation message %q does not ask the question", r.Params.Message)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no elicitation for the session's ask")
	}
	e.wantToolResult(2, "User selected: Blue", false)

	last, err := e.st.LastSeq(t.Context(), created.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	w := e.dial(created.SessionID, last)
	callOK(t, cs, "send_message", map[string]any{"sessionId": created.SessionID, "message": "And a size."}, nil)
	in := e.waitInput(w, created.SessionID)
	select {
	case <-elicited:
	case <-time.After(60 * time.Second):
		t.Fatal("no elicitation for the second ask")
	}
	w.answer(in, map[string]any{"choice": "Large"})
	e.wantToolResult(4, "User selected: Large", false)
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the elicitation was not cancelled after a teammate answered")
	}
	got, err := e.st.GetInput(t.Context(), in.ID)
	if err != nil || got.AnsweredBy != e.user.Name {
		t.Errorf("second ask = %+v, %v; want answered by the teammate in the page", got, err)
	}
}
