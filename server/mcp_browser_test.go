package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/mcpapi"
	"parley/runner/fakeapi"
)

// TestBrowserAnswersAskOfMCPSession: a member makes an API token on the
// tokens page; an MCP client using it starts a session; its ask appears in
// the page, is answered there, and the client sees it resolved (and its own
// late answer refused). Revoking the token on the page ends its use.
func TestBrowserAnswersAskOfMCPSession(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You chose " + fakeapi.ToolResultPlaceholder},
	}, envOptions{})
	ctx := e.browser(t)
	var token string
	step(t, ctx, "make a token on the tokens page",
		chromedp.Navigate(e.web.URL+"/tokens"),
		chromedp.WaitVisible(`#token-name`, chromedp.ByID),
		chromedp.SendKeys(`#token-name`, "browser test client", chromedp.ByID),
		chromedp.Submit(`#token-name`, chromedp.ByID),
		chromedp.WaitVisible(`#new-token-value`, chromedp.ByID),
		chromedp.Text(`#new-token-value`, &token, chromedp.ByID),
	)
	if !strings.HasPrefix(token, apiTokenPrefix) {
		t.Fatalf("the page shows token %q", token)
	}

	opts, updates := updatesOf()
	cs := e.mcpClient(token, "2025-11-25", opts)
	var created mcpapi.CreateSessionOutput
	callOK(t, cs, "create_session", map[string]any{"project": "Test project", "prompt": "Pick a colour for the button."}, &created)
	if err := cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: mcpapi.SessionURI(created.SessionID)}); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool { return len(s.PendingInputs) == 1 })
	if p := st.PendingInputs[0]; p.Type != "ask_user" || len(p.Questions) != 1 || p.Questions[0].Question != "Which colour?" {
		t.Fatalf("pending input = %+v", p)
	}
	inputID := st.PendingInputs[0].InputID

	step(t, ctx, "answer the MCP session's ask in the page",
		chromedp.Navigate(e.web.URL+"/sessions/"+created.SessionID),
		chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Click(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Click(`.ask button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask-outcome.ask-answered`, chromedp.ByQuery),
	)
	st = waitStatus(t, cs, updates, created.SessionID, func(s mcpapi.StatusOutput) bool { return s.Status == "completed" })
	if len(st.PendingInputs) != 0 || !slices.Contains(st.Output, "You chose User selected: Blue") {
		t.Errorf("after the page's answer the client sees %+v", st)
	}
	callErr(t, cs, "respond", map[string]any{"sessionId": created.SessionID, "inputId": inputID, "decision": "allow"}, "already answered")

	step(t, ctx, "revoke the token on the page",
		chromedp.Navigate(e.web.URL+"/tokens"),
		chromedp.Click(`#tokens button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#tokens .badge`, chromedp.ByQuery),
	)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}}); err == nil {
		t.Error("the token revoked on the page still works")
	}
}
