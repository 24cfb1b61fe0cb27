package server

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/mcpapi"
	"parley/runner/fakeapi"
)

// TestMCPSessionOverHTTP drives a whole session through /mcp with the
// go-sdk client: create_session starts claude, the resource subscription
// reports the permission ask at once, get_status shows it, respond allows
// it (a second answer is refused), and the turn completes.
func TestMCPSessionOverHTTP(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch made-by-mcp"), {Text: "Made the file."}}, envOptions{})
	opts, updates := updatesOf()
	cs := e.mcpClient(e.apiToken(e.user), "2025-11-25", opts)

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"create_session", "get_status", "interrupt", "list_sessions", "respond", "send_message"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}

	var created mcpapi.CreateSessionOutput
	callOK(t, cs, "create_session", map[string]any{"project": "Test project", "prompt": "Make a file, please."}, &created)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: mcpapi.SessionURI(created.SessionID)}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool { return s.Status == "waiting_for_input" })
	if len(st.PendingInputs) != 1 || st.PendingInputs[0].Type != "permission" || st.PendingInputs[0].ToolName != "Bash" ||
		st.PendingInputs[0].ToolInput["command"] != "touch made-by-mcp" {
		t.Fatalf("pending inputs = %+v, want one Bash permission", st.PendingInputs)
	}
	in := st.PendingInputs[0].InputID
	callOK(t, cs, "respond", map[string]any{"sessionId": created.SessionID, "inputId": in, "decision": "allow"}, nil)
	callErr(t, cs, "respond", map[string]any{"sessionId": created.SessionID, "inputId": in, "decision": "deny"}, "already answered")

	st = waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool { return s.Status == "completed" })
	if !slices.Contains(st.ToolsUsed, "Bash") || !slices.Contains(st.Output, "Made the file.") || st.Turns < 1 {
		t.Errorf("final status = %+v, want Bash used, the reply in the output, turns counted", st)
	}
	sess, err := e.st.GetSession(t.Context(), created.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.workspace(sess), "made-by-mcp")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if sess.CreatedBy != e.user.Name {
		t.Errorf("session created by %q, want the token's user %q", sess.CreatedBy, e.user.Name)
	}
}

// TestMCPAuthorization: a token acts with its user's role and projects,
// exactly as the pages do, and a revoked token fails at once.
func TestMCPAuthorization(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{})
	sess := e.newSession()
	viewer := e.member("viewer@example.com", "Vi", roleViewer)
	outsider := e.addUser("out@example.com", "Out", false)
	other, err := e.st.CreateProject(t.Context(), "Other project", outsider.ID)
	if err != nil {
		t.Fatal(err)
	}
	_ = other

	vs := e.mcpClient(e.apiToken(viewer), "", nil)
	callOK(t, vs, "get_status", map[string]any{"sessionId": sess.ID}, nil)
	callErr(t, vs, "send_message", map[string]any{"sessionId": sess.ID, "message": "hi"}, "Viewers can watch this project but not prompt")
	callErr(t, vs, "respond", map[string]any{"sessionId": sess.ID, "inputId": sess.ID, "decision": "allow"}, "Viewers can watch this project but not answer")
	callErr(t, vs, "interrupt", map[string]any{"sessionId": sess.ID}, "Viewers can watch this project but not prompt or stop")
	callErr(t, vs, "create_session", map[string]any{"project": "Test project", "prompt": "hi"}, "Viewers can watch")

	oc := e.mcpClient(e.apiToken(outsider), "", nil)
	for tool, args := range map[string]map[string]any{
		"get_status":   {"sessionId": sess.ID},
		"send_message": {"sessionId": sess.ID, "message": "hi"},
		"respond":      {"sessionId": sess.ID, "inputId": sess.ID, "decision": "allow"},
		"interrupt":    {"sessionId": sess.ID},
	} {
		callErr(t, oc, tool, args, mcpapi.ErrNotFound.Msg)
	}
	callErr(t, oc, "create_session", map[string]any{"project": "Test project", "prompt": "hi"}, `project: no project "Test project"`)
	var list mcpapi.ListSessionsOutput
	callOK(t, oc, "list_sessions", map[string]any{}, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("an outsider lists %+v", list.Sessions)
	}
	if _, err := oc.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: mcpapi.SessionURI(sess.ID)}); err == nil {
		t.Error("an outsider read the session's resource")
	}

	// Options a project forbids are refused, naming the field.
	ms := e.mcpClient(e.apiToken(e.user), "", nil)
	for field, args := range map[string]map[string]any{
		"permissionMode": {"permissionMode": "bypassPermissions"},
		"allowedTools":   {"allowedTools": []string{"--dangerously-skip-permissions"}},
		"model":          {"model": "-x"},
		"prompt":         {"prompt": " "},
	} {
		a := map[string]any{"project": "Test project", "prompt": "hi"}
		for k, v := range args {
			a[k] = v
		}
		callErr(t, ms, "create_session", a, field+":")
	}

	// Revoked: the very next request fails.
	token := e.apiToken(e.user)
	rs := e.mcpClient(token, "2025-11-25", nil)
	callOK(t, rs, "list_sessions", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sess.ID {
		t.Errorf("member lists %+v, want the one session", list.Sessions)
	}
	tokens, err := e.st.APITokens(t.Context(), e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.RevokeAPIToken(t.Context(), tokens[0].ID, e.user.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}}); err == nil {
		t.Error("a revoked token still works")
	}
	if _, err := e.mcpConnect(token, "", nil); err == nil {
		t.Error("a revoked token connects")
	}
	if _, err := e.mcpConnect("prl_not-a-token", "", nil); err == nil {
		t.Error("a made-up token connects")
	}

	// A rebound or cross-site page: no token, or a foreign Origin, is refused.
	live := e.apiToken(e.user)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, h := range map[string]map[string]string{
		"no token, foreign Host": {"Host": "evil.example.com"},
		"foreign Origin":         {"Origin": "http://evil.example.com", "Authorization": "Bearer " + live},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.web.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		req.Host = h["Host"]
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 401 or 403", name, res.StatusCode)
		}
	}
}

// TestMCPInterrupt: interrupt is the page's Stop: the turn ends, reported
// as interrupted, and the session takes the next message.
func TestMCPInterrupt(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, fakeapi.Scenario{{Text: "Thinking hard", Hold: hold}, {Text: "Back again."}}, envOptions{})
	opts, updates := updatesOf()
	cs := e.mcpClient(e.apiToken(e.user), "2025-11-25", opts)
	var created mcpapi.CreateSessionOutput
	callOK(t, cs, "create_session", map[string]any{"project": "Test project", "prompt": "Think."}, &created)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: mcpapi.SessionURI(created.SessionID)}); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	callOK(t, cs, "interrupt", map[string]any{"sessionId": created.SessionID}, nil)
	waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool { return s.Status == "interrupted" })
	callOK(t, cs, "send_message", map[string]any{"sessionId": created.SessionID, "message": "Go on."}, nil)
	waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool {
		return s.Status == "completed" && slices.Contains(s.Output, "Back again.")
	})
}

// TestMCPUnsubscribeIsPerClient: an MCP client that never subscribed to a
// session cannot stop another client's updates by unsubscribing, however
// often; the subscriber's own unsubscribe does stop them.
func TestMCPUnsubscribeIsPerClient(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First."}, {Text: "Second."}, {Text: "Third."}}, envOptions{quiet: true})
	sess := e.newSession()
	opts, updates := updatesOf()
	sub := e.mcpClient(e.apiToken(e.user), "", opts)
	other := e.mcpClient(e.apiToken(e.member("other@example.com", "Other", roleMember)), "", nil)
	uri := mcpapi.SessionURI(sess.ID)
	if err := sub.Subscribe(t.Context(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := other.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	reply := func(c *mcp.ClientSession, text string) {
		t.Helper()
		waitUntil(t, 90*time.Second, "the reply "+text, func() bool {
			var st mcpapi.StatusOutput
			callOK(t, c, "get_status", map[string]any{"sessionId": sess.ID, "outputLines": 50}, &st)
			return slices.Contains(st.Output, text)
		})
	}
	callOK(t, other, "send_message", map[string]any{"sessionId": sess.ID, "message": "hello"}, nil)
	reply(sub, "First.") // read without waiting on updates: they gather in the channel
	select {
	case <-updates:
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber got no update after another client's unsubscribes")
	}
	// Its own unsubscribe ends them: a turn after it brings none. The
	// first turn's last updates are let in first (they are coalesced and
	// may still be on their way).
	waitUntil(t, 90*time.Second, "the first turn's end", func() bool {
		var st mcpapi.StatusOutput
		callOK(t, sub, "get_status", map[string]any{"sessionId": sess.ID}, &st)
		return st.Status == "completed"
	})
	if err := sub.Unsubscribe(t.Context(), &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	for quiet := false; !quiet; {
		select {
		case <-updates:
		case <-time.After(300 * time.Millisecond):
			quiet = true
		}
	}
	callOK(t, other, "send_message", map[string]any{"sessionId": sess.ID, "message": "again"}, nil)
	reply(other, "Second.")
	select {
	case <-updates:
		t.Error("an update after the subscriber's own unsubscribe")
	case <-time.After(time.Second):
	}
}
