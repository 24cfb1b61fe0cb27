package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/act"
	"parley/runner/fakeapi"
)

// mcpStream opens MCP's standalone GET stream with token, as a client
// does after initialize, and returns a channel closed when the stream ends.
func (e *env) mcpStream(token string) <-chan struct{} {
	e.t.Helper()
	post := func(sid, body string) *http.Response {
		req, _ := http.NewRequestWithContext(e.t.Context(), "POST", e.web.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		e.t.Fatalf("mcp initialize: status %d, session %q", resp.StatusCode, sid)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	req, _ := http.NewRequestWithContext(e.t.Context(), "GET", e.web.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		e.t.Fatalf("mcp GET stream: %v, %v", stream, err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		io.Copy(io.Discard, bufio.NewReader(stream.Body))
	}()
	e.t.Cleanup(func() { stream.Body.Close() })
	return ended
}

// mcpStatus is the status of a tools/list call to /mcp with token.
func (e *env) mcpStatus(token string) int {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), "POST", e.web.URL+"/mcp",
		bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDeactivateCutsOff: an admin deactivates Bob while he has a session
// page and the inbox open, an MCP client with its stream open, and a turn
// running. Within the ping period his sockets close, the MCP stream ends,
// his API token and his cookie are refused and he cannot sign in; his
// turn runs on to its end, uninterrupted. Reactivated, he signs in and
// his token works again.
func TestDeactivateCutsOff(t *testing.T) {
	hold := make(chan struct{})
	ping := 500 * time.Millisecond
	e := newEnv(t, fakeapi.Scenario{{Text: "Bob's long job", Hold: hold}}, envOptions{quiet: true, pingPeriod: ping})
	admin := e.addUser("ada@example.com", "Ada", true)
	owner := e.member("olga@example.com", "Olga", roleOwner)
	bob := e.member("bob@example.com", "Bob", roleMember)
	token := e.apiToken(bob)
	s := e.newSession()
	wo := e.dialAs(owner, s.ID, 0)
	wb := e.dialAs(bob, s.ID, 0)
	wi := e.dialPathAs(bob, "/inbox/ws")
	stream := e.mcpStream(token)
	wb.prompt("a long job")
	wo.waitFor(60*time.Second, "Bob&#39;s long job")
	select {
	case <-stream:
		t.Fatal("the MCP stream ended before the deactivation")
	case <-time.After(2 * ping):
	}

	uid := strconv.FormatInt(bob.ID, 10)
	if resp := e.postAs(admin, "/admin/users/"+uid+"/deactivate", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("deactivate: status %d", resp.StatusCode)
	}
	began := time.Now()
	limit := 2*ping + 2*time.Second
	for name, w := range map[string]*ws{"session page": wb, "inbox": wi} {
		if d, ok := closedWithin(w, limit); ok {
			t.Logf("Bob's %s socket closed after %s", name, d.Round(time.Millisecond))
		} else {
			t.Errorf("Bob's %s socket was still open %s after his deactivation", name, limit)
		}
	}
	select {
	case <-stream:
		t.Logf("MCP stream ended after %s", time.Since(began).Round(time.Millisecond))
	case <-time.After(limit):
		t.Errorf("Bob's MCP stream was still open %s after his deactivation", limit)
	}
	if st := e.mcpStatus(token); st != http.StatusUnauthorized {
		t.Errorf("Bob's API token after deactivation: status %d, want 401", st)
	}
	if resp := e.do(bob, "GET", "/inbox", nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("Bob's sign-in after deactivation: status %d, want 303 to the login page", resp.StatusCode)
	}
	if st, body := e.tryLogin(bob); st != http.StatusForbidden || !strings.Contains(body, "deactivated") {
		t.Errorf("Bob signing in while deactivated: status %d:\n%s", st, body)
	}

	// His turn is not orphaned: it runs on and ends, nobody interrupts it.
	close(hold)
	waitUntil(t, 30*time.Second, "the end of Bob's turn", func() bool { return count(e.eventTypes(s.ID), "result") == 1 })
	if got := e.interrupts(s.ID); len(got) != 0 {
		t.Errorf("Bob's turn was interrupted: %v", got)
	}

	if resp := e.postAs(admin, "/admin/users/"+uid+"/reactivate", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reactivate: status %d", resp.StatusCode)
	}
	e.login(bob)
	if st := e.mcpStatus(token); st != http.StatusOK {
		t.Errorf("Bob's API token after reactivation: status %d, want 200", st)
	}
}

// tryLogin posts u's email and password to the login form; it returns the
// status and body.
func (e *env) tryLogin(u *testUser) (int, string) {
	e.t.Helper()
	f, _, _ := e.openLink("/login")
	resp, body := f.post(url.Values{"email": {u.Email}, "password": {u.Password}})
	return resp.StatusCode, body
}

// TestAdminSelfGuards: an admin cannot deactivate themselves or take
// their own admin rights; a non-admin gets 403 on every admin action and
// nothing changes.
func TestAdminSelfGuards(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	aid := "/admin/users/" + strconv.FormatInt(admin.ID, 10)
	for _, p := range []string{aid + "/deactivate", aid + "/admin"} {
		if resp := e.postAs(admin, p, url.Values{"admin": {"0"}}); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("POST %s on oneself: status %d, want 400", p, resp.StatusCode)
		}
	}
	uid := "/admin/users/" + strconv.FormatInt(e.user.ID, 10)
	for _, p := range []string{"/admin/users/" + strconv.FormatInt(admin.ID, 10) + "/deactivate", uid + "/admin", uid + "/reset"} {
		if resp := e.postAs(e.user, p, url.Values{"admin": {"1"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s as a member: status %d, want 403", p, resp.StatusCode)
		}
	}
	a, err := e.st.AccountByID(t.Context(), admin.ID)
	if err != nil || !a.IsAdmin || a.DeactivatedAt != nil {
		t.Errorf("the admin after the refusals: %+v, %v", a, err)
	}
	if u, _ := e.st.AccountByID(t.Context(), e.user.ID); u.IsAdmin {
		t.Error("a member made themselves admin")
	}
}

// closedWithin waits up to limit for the server to close w's socket.
func closedWithin(w *ws, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	deadline := time.After(limit)
	for {
		select {
		case _, open := <-w.frames:
			if !open {
				return time.Since(start), true
			}
		case <-deadline:
			return limit, false
		}
	}
}

// TestDeactivatedActorRefused: the act service, through which push,
// e-mail and Slack answer links, MCP and the CLI's remote answers act,
// refuses a deactivated member with a sentence, and serves them again once
// reactivated.
func TestDeactivatedActorRefused(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	bob := e.member("bob@example.com", "Bob", roleMember)
	s := e.newSession()
	actor := act.Actor{ID: bob.ID, Name: "Bob"}
	uid := "/admin/users/" + strconv.FormatInt(bob.ID, 10)
	if resp := e.postAs(admin, uid+"/deactivate", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("deactivate: status %d", resp.StatusCode)
	}
	var ref act.Refusal
	if _, err := e.srv.Acts().Access(t.Context(), actor, e.project.ID, act.View); !errors.As(err, &ref) || !strings.Contains(ref.Refusal(), "deactivated") {
		t.Errorf("Access of a deactivated member: %v", err)
	}
	if _, err := e.srv.Acts().Session(t.Context(), actor, s.ID, act.Answer); !errors.As(err, &ref) || !strings.Contains(ref.Refusal(), "deactivated") {
		t.Errorf("Session of a deactivated member: %v", err)
	}
	if resp := e.postAs(admin, uid+"/reactivate", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reactivate: status %d", resp.StatusCode)
	}
	if _, err := e.srv.Acts().Session(t.Context(), actor, s.ID, act.Answer); err != nil {
		t.Errorf("Session of a reactivated member: %v", err)
	}
}

// TestDeactivateDropsResetLinks: a password-reset link sent before the
// deactivation no longer works, during it or after a reactivation.
func TestDeactivateDropsResetLinks(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada", true)
	bob := e.member("bob@example.com", "Bob", roleMember)
	uid := "/admin/users/" + strconv.FormatInt(bob.ID, 10)
	path := e.linkPathOf(e.postAs(admin, uid+"/reset", nil))
	for _, step := range []string{"/deactivate", "/reactivate"} {
		if resp := e.postAs(admin, uid+step, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: status %d", step, resp.StatusCode)
		}
		if _, st, body := e.openLink(path); st != http.StatusGone {
			t.Errorf("the reset link after %s: status %d:\n%s", step, st, body)
		}
	}
}
