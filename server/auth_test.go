package server

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"parley/metrics"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/launch"
	"parley/runner/fakeapi"
)

// roleNames are the columns of the authorization matrix.
var roleNames = []string{"anonymous", "outsider", "viewer", "member", "owner", "admin"}

// team is one of each kind of user around the env's project.
type team map[string]*testUser

func newTeam(e *env) team {
	e.t.Helper()
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	return team{
		"anonymous": nil,
		"outsider":  e.addUser("outsider@example.com", "Otto Outsider", false),
		"viewer":    e.member("viewer@example.com", "Vera Viewer", roleViewer),
		"member":    e.user,
		"owner":     owner,
		"admin":     e.addUser("admin@example.com", "Ada Admin", true),
	}
}

// level is what a route needs.
type level int

const (
	public    level = iota // anyone, signed in or not
	signedIn               // any account
	toView                 // viewer of the project
	toPrompt               // member of the project
	toManage               // owner of the project
	adminOnly              // admins
	ownsAny                // admins and owners of any project (the audit trail); others 403
)

// rank is how far each role reaches in the env's project.
var rank = map[string]level{"anonymous": public, "outsider": signedIn, "viewer": toView, "member": toPrompt, "owner": toManage, "admin": adminOnly}

type route struct {
	method, path string
	form         url.Values // nil for GET
	need         level
	ok           int // the status when allowed (the forms are invalid on purpose, so nothing runs)
}

func TestAuthorizationMatrix(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, reach: true, metrics: metrics.New(nil, nil), sso: startOP(t).provider(time.Hour, nil)})
	tm := newTeam(e)
	sess := e.newSession()
	pid := strconv.FormatInt(e.project.ID, 10)
	pp, sp := "/projects/"+pid, "/sessions/"+sess.ID
	dp := "/sessions/" + e.newSession().ID // deleted by the matrix (session_delete.go)
	outsiderID := strconv.FormatInt(tm["outsider"].ID, 10)
	viewerID := strconv.FormatInt(tm["viewer"].ID, 10)
	aid := e.sentImage(sess.ID) // attach_test.go
	// A file in the project's workspace, the session's files (files.go).
	if err := os.MkdirAll(launch.WorkspaceDir(e.dataDir, e.project), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(launch.WorkspaceDir(e.dataDir, e.project), "readme.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	routes := []route{
		{"GET", "/login", nil, public, 200},
		{"GET", "/login/oidc", nil, public, 303},                         // to the provider, whoever asks
		{"GET", "/login/oidc/callback?state=s&code=c", nil, public, 403}, // no flow cookie: refused
		{"GET", "/healthz", nil, public, 200},
		{"GET", "/static/app.css", nil, public, 200},
		{"GET", "/inbox", nil, signedIn, 200},
		{"POST", "/projects", url.Values{"name": {""}}, adminOnly, 400},
		{"GET", pp, nil, toView, 200},
		{"GET", pp + "/history", nil, toView, 200},
		{"GET", sp, nil, toView, 200},
		{"GET", sp + "/export.md", nil, toView, 200},
		{"GET", sp + "/export.json", nil, toView, 200},
		{"POST", sp + "/attachments", url.Values{}, toPrompt, 400}, // not a multipart upload (attach.go)
		{"GET", "/attachments/" + aid, nil, toView, 200},
		{"POST", "/attachments/" + aid + "/remove", url.Values{}, toPrompt, 204}, // a no-op but for its uploader
		{"GET", sp + "/mode", nil, toView, 200},
		{"GET", sp + "/commands", nil, toView, 200},
		// Sessions at a glance (board.go): the home board, a project's
		// sidebar, the board's search (to the project's history).
		{"GET", "/", nil, signedIn, 200},
		{"GET", pp + "/sidebar?current=" + sess.ID, nil, toView, 200},
		{"GET", "/search?project=" + pid + "&q=x", nil, toView, 303},
		{"POST", pp + "/sessions", url.Values{"text": {" "}}, toPrompt, 400},
		{"POST", "/sessions", url.Values{"project_id": {pid}, "text": {" "}}, toPrompt, 400},
		{"POST", sp + "/rename", url.Values{"title": {" "}}, toPrompt, 400},
		{"POST", sp + "/archive", url.Values{"archived": {"0"}}, toPrompt, 303},
		{"GET", pp + "/settings", nil, toManage, 200},
		{"POST", pp + "/settings", url.Values{"permission_mode": {"yolo"}}, toManage, 400},
		{"POST", pp + "/rename", url.Values{"name": {" "}}, toManage, 400},
		{"POST", pp + "/archive", url.Values{"archived": {"0"}}, toManage, 303},
		{"POST", pp + "/delete", url.Values{"confirm": {"not the name"}}, toManage, 400},
		{"POST", pp + "/settings/members", url.Values{"email": {"viewer@example.com"}, "role": {"king"}}, toManage, 400},
		{"POST", pp + "/settings/members/" + viewerID, url.Values{"role": {"king"}}, toManage, 400},
		{"POST", pp + "/settings/members/" + outsiderID + "/remove", url.Values{}, toManage, 400},
		// Routes the matrix did not list before issue 31: a session's
		// worktree, the project's ask and MCP settings, API tokens, the
		// probes and metrics (/metrics: loopback as Parley's own uid).
		{"POST", sp + "/worktree/merge", url.Values{}, toPrompt, 400},
		{"POST", sp + "/worktree/discard", url.Values{}, toPrompt, 400},
		{"GET", sp + "/files", nil, toView, 200},
		{"GET", sp + "/files/view?path=readme.txt", nil, toView, 200},
		{"GET", sp + "/files/diff?path=readme.txt", nil, toView, 200},
		{"GET", sp + "/files/raw?path=readme.txt", nil, toView, 200},
		{"POST", pp + "/settings/asks", url.Values{"expiry_days": {"-1"}}, toManage, 400},
		{"POST", pp + "/settings/mcp", url.Values{"max_budget": {"x"}}, toManage, 400},
		// Deleting a session (issue 32): the confirmation and the delete,
		// of a session of their own (the owner's deletes it, the admin's
		// finds it deleted already), and retention.
		{"GET", dp + "/delete", nil, toManage, 200},
		{"POST", dp + "/delete", url.Values{}, toManage, 200},
		{"POST", pp + "/settings/retention", url.Values{"retention_days": {"-1"}}, toManage, 400},
		{"GET", "/tokens", nil, signedIn, 200},
		{"POST", "/tokens", url.Values{"name": {" "}}, signedIn, 400},
		{"POST", "/tokens/999999/revoke", url.Values{}, signedIn, 404},
		{"GET", "/readyz", nil, public, 200},
		{"GET", "/metrics", nil, public, 200},
		// Reach (issue 30): a person's notifications, the project's reach
		// settings, and the routes whose credential is a token or a
		// signature, not a sign-in.
		{"GET", "/notifications", nil, signedIn, 200},
		{"POST", "/notifications", url.Values{"quiet_from": {"25:00"}}, signedIn, 400},
		{"GET", "/push/key", nil, signedIn, 200},
		{"POST", "/push/subscriptions", url.Values{}, signedIn, 400},
		{"POST", "/push/subscriptions/999999/test", url.Values{}, signedIn, 404},
		{"POST", pp + "/settings/reach", url.Values{"first_reach": {"nobody"}}, toManage, 400},
		{"GET", "/sw.js", nil, public, 200},
		{"GET", "/manifest.webmanifest", nil, public, 200},
		{"POST", "/reach/answer", url.Values{}, public, 400},
		{"GET", "/reach/a/no-such-token?action=allow", nil, public, 200}, // a page saying the link is dead
		{"POST", "/reach/a/no-such-token", url.Values{"action": {"allow"}}, public, 403},
		{"POST", "/slack/interactions/999999", url.Values{}, public, 404},
		{"GET", "/audit", nil, ownsAny, 200},
		{"GET", "/audit/export", nil, ownsAny, 200},
		// Web administration (admin.go, account.go, invite.go): forms that
		// change nothing (no such account, no address, a wrong password), and
		// links with an unknown token (410 for anyone, signed in or not).
		{"GET", "/admin/users", nil, adminOnly, 200},
		{"POST", "/admin/users/invite", url.Values{"email": {"not an address"}}, adminOnly, 400},
		{"POST", "/admin/users/999999/deactivate", url.Values{}, adminOnly, 400},
		{"POST", "/admin/users/999999/reactivate", url.Values{}, adminOnly, 400},
		{"POST", "/admin/users/999999/admin", url.Values{"admin": {"1"}}, adminOnly, 400},
		{"POST", "/admin/users/999999/reset", url.Values{}, adminOnly, 400},
		{"GET", "/account", nil, signedIn, 200},
		{"POST", "/account/name", url.Values{"name": {" "}}, signedIn, 400},
		{"POST", "/account/password", url.Values{"current": {"wrong"}, "password": {"new password"}}, signedIn, 400},
		{"GET", "/invite/no-such-token", nil, public, 410},
		{"POST", "/invite/no-such-token", url.Values{"name": {"x"}, "password": {"new password"}}, public, 410},
		{"GET", "/reset/no-such-token", nil, public, 410},
		{"POST", "/reset/no-such-token", url.Values{"password": {"new password"}}, public, 410},
		{"POST", "/account/sign-out-everywhere", url.Values{}, signedIn, 303}, // last: it signs each role out (signed in again below)
	}
	notFound := e.getAs(tm["outsider"], "/projects/999999")
	for _, rt := range routes {
		for _, role := range roleNames {
			u := tm[role]
			var resp *http.Response
			if rt.form == nil {
				resp = e.do(u, rt.method, rt.path, nil)
			} else {
				resp = e.postAs(u, rt.path, url.Values(cloneValues(rt.form)))
			}
			want := expected(rt, role)
			if resp.StatusCode != want {
				t.Errorf("%s %s as %s: status %d, want %d", rt.method, rt.path, role, resp.StatusCode, want)
			}
			if role == "anonymous" && want == http.StatusSeeOther && rt.path != "/login/oidc" { // that one goes to the provider
				if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/login?next=") {
					t.Errorf("%s %s as anonymous: redirected to %q, want the login page", rt.method, rt.path, loc)
				}
			}
			if role == "outsider" && want == http.StatusNotFound && rt.method == "GET" {
				var body bytes.Buffer
				body.ReadFrom(resp.Body)
				if body.String() != notFound {
					t.Errorf("GET %s as an outsider tells more than a missing project would:\n%s", rt.path, body.String())
				}
			}
		}
	}
	for _, u := range tm { // signed out everywhere by the last route
		if u != nil {
			e.login(u)
		}
	}
	// The session list and the inbox: an outsider sees nothing of the project.
	if page := e.getAs(tm["outsider"], "/"); strings.Contains(page, "Test project") {
		t.Errorf("the outsider's project list shows the project:\n%s", page)
	}
	if page := e.getAs(tm["admin"], "/"); !strings.Contains(page, "Test project") {
		t.Errorf("the admin's project list lacks the project:\n%s", page)
	}
	// Nothing changed: every allowed request was refused after its authorization.
	if got, _ := e.st.GetSession(t.Context(), sess.ID); got.Title != "test" {
		t.Errorf("session title = %q", got.Title)
	}
	if list, _ := e.st.ListSessions(t.Context(), e.project.ID); len(list) != 1 {
		t.Errorf("the project has %d sessions, want 1", len(list))
	}
}

// expected is the status of rt for role.
func expected(rt route, role string) int {
	switch {
	case rt.need == ownsAny && (role == "owner" || role == "admin"):
		return rt.ok
	case rt.need == ownsAny && role != "anonymous":
		return http.StatusForbidden
	case rt.need == public || rank[role] >= rt.need && (rt.need != adminOnly || role == "admin"):
		if rt.path == "/login" && role != "anonymous" {
			return http.StatusSeeOther // signed in already: back home
		}
		return rt.ok
	case role == "anonymous":
		if rt.method == "GET" {
			return http.StatusSeeOther
		}
		return http.StatusUnauthorized
	case rt.need == adminOnly:
		return http.StatusForbidden
	case role == "outsider":
		return http.StatusNotFound
	}
	return http.StatusForbidden
}

func cloneValues(v url.Values) map[string][]string {
	out := map[string][]string{}
	for k, l := range v {
		out[k] = append([]string(nil), l...)
	}
	return out
}

// TestWebSocketMatrix: the upgrade and each WS action, by role.
func TestWebSocketMatrix(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, reach: true})
	tm := newTeam(e)
	sess := e.newSession()
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + "/sessions/" + sess.ID + "/ws"
	for role, want := range map[string]int{"anonymous": 401, "outsider": 404} {
		_, resp, err := websocket.DefaultDialer.Dial(url, e.header(tm[role]))
		if err == nil || resp == nil || resp.StatusCode != want {
			t.Errorf("WebSocket upgrade as %s: %v, %v; want status %d", role, err, resp, want)
		}
		_, resp, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.web.URL, "http")+"/inbox/ws", e.header(tm[role]))
		if role == "anonymous" && (err == nil || resp.StatusCode != 401) {
			t.Errorf("inbox WebSocket as anonymous: %v", err)
		}
		// A project's sidebar socket is refused to who may not see the
		// project; the board's to who is not signed in (board_ws.go).
		sidebar := "ws" + strings.TrimPrefix(e.web.URL, "http") + "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/sidebar/ws"
		if _, resp, err := websocket.DefaultDialer.Dial(sidebar, e.header(tm[role])); err == nil || resp == nil || resp.StatusCode != want {
			t.Errorf("sidebar WebSocket as %s: %v, %v; want status %d", role, err, resp, want)
		}
		_, resp, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.web.URL, "http")+"/board/ws", e.header(tm[role]))
		if role == "anonymous" && (err == nil || resp.StatusCode != 401) {
			t.Errorf("board WebSocket as anonymous: %v", err)
		}
	}
	h := e.header(tm["member"])
	h.Set("Origin", "http://evil.example")
	if _, resp, err := websocket.DefaultDialer.Dial(url, h); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("WebSocket upgrade from another origin: %v, %v; want 403", err, resp)
	}
	denied := map[string]string{
		"prompt": "Viewers can watch this project but not prompt",
		"stop":   "Viewers can watch this project but not prompt or stop",
		"answer": "Viewers can watch this project but not answer",
		"retry":  "Viewers can watch this project but not prompt",
		"switch": "Viewers can watch this project but not prompt",
	}
	msgs := map[string]map[string]any{
		"prompt": {"action": "prompt", "text": " "},
		"stop":   {"action": "stop"},
		"answer": {"action": "answer", "input_id": "00000000-0000-4000-8000-000000000000", "decision": "deny"},
		"retry":  {"action": "retry"},
		"switch": {"action": "switch", "what": "permission_mode", "value": "default"},
	}
	for _, role := range []string{"viewer", "member", "owner", "admin"} {
		w := e.dialAs(tm[role], sess.ID, 0)
		for _, act := range []string{"prompt", "stop", "answer", "retry", "switch"} {
			w.send(msgs[act])
			got := w.waitFor(10*time.Second, `class="toast`)
			if isDenied := strings.Contains(got, denied[act]); isDenied != (role == "viewer") {
				t.Errorf("WS %s as %s: denied=%v; frames:\n%s", act, role, isDenied, got)
			}
		}
		// Typing is a hint that starts nothing for who may not write
		// (TestResumeAheadOnlyForWriters) and writes no event for anyone.
		w.send(map[string]any{"action": "typing"})
		// Every role that may watch may say it is looking (reach counts
		// only those who may answer).
		w.send(map[string]any{"action": "visible", "visible": true})
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := e.st.LookingAt(t.Context(), e.project.ID, sess.ID, []int64{tm[role].ID})
			if len(got) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("WS visible as %s: not recorded", role)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		w.conn.Close()
	}
	if types := e.eventTypes(sess.ID); len(types) != 0 {
		t.Errorf("refused or empty actions wrote events: %v", types)
	}
}

// TestRelayIsSeparate: the ask relay is not on the public surface, and it
// takes a run's token, never a sign-in.
func TestRelayIsSeparate(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	if resp := e.postAs(e.user, "/ask", url.Values{}); resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ask on the web server: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", e.relay.URL+"/ask", strings.NewReader(`{}`))
	req.Header = e.header(e.user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("relay with a sign-in cookie but no run token: %d, want 403", resp.StatusCode)
	}
}

func TestCSRF(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga", roleOwner)
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10)
	forged := []struct {
		name string
		form url.Values
		hdr  map[string]string
	}{
		{"no token", url.Values{"csrf": {""}}, nil},
		{"another sign-in's token", url.Values{"csrf": {e.user.CSRF}}, nil},
		{"a made-up token", url.Values{"csrf": {"x"}}, nil},
		{"a cross-site origin", url.Values{"csrf": {owner.CSRF}}, map[string]string{"Origin": "http://evil.example"}},
	}
	for _, f := range forged {
		for _, path := range []string{pp + "/settings", pp + "/rename", pp + "/sessions", "/logout"} {
			form := url.Values(cloneValues(f.form))
			form.Set("model", "evil-model")
			form.Set("permission_mode", "bypassPermissions")
			form.Set("name", "Pwned")
			form.Set("text", "rm -rf /")
			req, _ := http.NewRequest("POST", e.web.URL+path, strings.NewReader(form.Encode()))
			req.Header = e.header(owner)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range f.hdr {
				req.Header.Set(k, v)
			}
			resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s to %s: status %d, want 403", f.name, path, resp.StatusCode)
			}
		}
	}
	p, err := e.st.GetProject(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Test project" || p.Model != "" || p.PermissionMode != "default" {
		t.Errorf("forged requests changed the project: %+v", p)
	}
	if list, _ := e.st.ListSessions(t.Context(), p.ID); len(list) != 0 {
		t.Errorf("forged requests started %d sessions", len(list))
	}
	if page := e.getAs(owner, "/inbox"); !strings.Contains(page, "Sign out") {
		t.Error("a forged logout signed the owner out")
	}
	// The header form of the token (htmx) works.
	req, _ := http.NewRequest("POST", e.web.URL+pp+"/rename", strings.NewReader("name=Renamed"))
	req.Header = e.header(owner)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(csrfHeader, owner.CSRF)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("rename with the token in %s: %d", csrfHeader, resp.StatusCode)
	}
	// A forged login (no form token) is refused too.
	resp = e.do(nil, "POST", "/login", url.Values{"email": {owner.Email}, "password": {testPassword}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("login without its form token: %d, want 403", resp.StatusCode)
	}
}
