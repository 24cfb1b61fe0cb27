package server

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/audit"
	"parley/runner/fakeapi"
)

// waitAudit waits for n rows of action and returns them, newest first.
func (e *env) waitAudit(action string, n int) []audit.Row {
	e.t.Helper()
	var rows []audit.Row
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if rows, err = audit.New(e.st).List(e.t.Context(), audit.Filter{Action: action}); err != nil {
			e.t.Fatal(err)
		}
		if len(rows) >= n {
			return rows
		}
	}
	e.t.Fatalf("%d %s rows in the audit trail, want %d: %+v", len(rows), action, n, rows)
	return nil
}

// TestAuditSignIns: a sign-in and a refused one are recorded with who,
// from where and the surface; the chain holds.
func TestAuditSignIns(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	in := e.waitAudit(audit.SignIn, 1)[0]
	if in.ActorID != e.user.ID || in.Surface != audit.Page || in.Source != "127.0.0.1" || in.Target != e.user.Email {
		t.Errorf("sign-in row = %+v", in)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	m := csrfInput.FindStringSubmatch(e.fetch(c, "/login"))
	resp, err := c.PostForm(e.web.URL+"/login", url.Values{"csrf": {m[1]}, "email": {e.user.Email}, "password": {"wrong"}})
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %v, %v", resp, err)
	}
	resp.Body.Close()
	bad := e.waitAudit(audit.SignInFailed, 1)[0]
	if bad.ActorID != 0 || bad.ActorName != e.user.Email || bad.Source != "127.0.0.1" || bad.Surface != audit.Page ||
		!strings.Contains(string(bad.Detail), "wrong email or password") {
		t.Errorf("failed sign-in row = %+v (%s)", bad, bad.Detail)
	}
	if res, err := audit.New(e.st).Verify(t.Context()); err != nil || !res.OK() {
		t.Errorf("Verify = %v, %v", res, err)
	}
}

// TestAuditAnswerSurfaces: an ask's answer is recorded with the surface
// it came from, who answered, the ask and the tool; Allow always is its
// own action.
func TestAuditAnswerSurfaces(t *testing.T) {
	for _, surface := range []string{audit.Page, audit.Inbox, audit.MCP, audit.Terminal, "always"} {
		t.Run(surface, func(t *testing.T) {
			e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "ok"}}, envOptions{quiet: true})
			s := e.newSession()
			w := e.dial(s.ID, 0)
			w.prompt("make x")
			in := e.waitInput(w, s.ID)
			action, want := audit.AskAnswer, surface
			switch surface {
			case audit.Page:
				w.answer(in, map[string]any{"decision": "allow"})
			case "always":
				action, want = audit.AllowAlways, audit.Page
				w.answer(in, map[string]any{"decision": "always", "command": "touch x"})
			case audit.Inbox:
				e.dialPath("/inbox/ws?list=1").send(map[string]any{"action": "answer", "input_id": in.ID, "session_id": s.ID, "decision": "allow"})
			case audit.MCP:
				cs := e.mcpClient(e.apiToken(e.user), "", nil)
				callOK(t, cs, "respond", map[string]any{"sessionId": s.ID, "inputId": in.ID, "decision": "allow"}, nil)
			case audit.Terminal:
				if _, err := runAsks(t, e.listenForTerminals(t), "answer", in.ID, "--allow"); err != nil {
					t.Fatal(err)
				}
			}
			row := e.waitAudit(action, 1)[0]
			if row.Surface != want || row.ActorID != e.user.ID || row.SessionID != s.ID || row.Target != in.ID ||
				row.ProjectID != e.project.ID || !strings.Contains(string(row.Detail), `"Bash"`) || !strings.Contains(string(row.Detail), `"allow`) || !strings.Contains(string(row.Detail), `"touch x"`) {
				t.Errorf("answer row = %+v (%s); want surface %s", row, row.Detail, want)
			}
			if surface == "always" && !strings.Contains(string(row.Detail), `"ruleContent": "touch x *"`) {
				t.Errorf("allow-always row lacks the rule it added: %s", row.Detail)
			}
		})
	}
}

// TestAuditPageScope: admins see every row, an owner their projects' rows
// only, on the page and in the export; a plain member is refused both.
func TestAuditPageScope(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	tm := newTeam(e)
	other, err := e.st.CreateProject(t.Context(), "Other", tm["admin"].ID)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(e.st)
	for _, e := range []audit.Entry{
		{ActorName: "x", Surface: audit.Page, Action: audit.ProjectSettings, ProjectID: e.project.ID, Target: "mine-marker"},
		{ActorName: "x", Surface: audit.Page, Action: audit.ProjectSettings, ProjectID: other.ID, Target: "theirs-marker"},
	} {
		if err := l.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	rowsOn := regexp.MustCompile(`<tr id="audit-`)
	page := e.getAs(tm["owner"], "/audit")
	if !strings.Contains(page, "mine-marker") || strings.Contains(page, "theirs-marker") || len(rowsOn.FindAllString(page, -1)) != 1 {
		t.Errorf("the owner's audit page shows other rows than their project's one:\n%s", page)
	}
	if exp := e.getAs(tm["owner"], "/audit/export"); strings.Count(exp, "\n") != 1 || !strings.Contains(exp, "mine-marker") {
		t.Errorf("the owner's export = %q, want their project's one row", exp)
	}
	page = e.getAs(tm["admin"], "/audit")
	if !strings.Contains(page, "mine-marker") || !strings.Contains(page, "theirs-marker") || !strings.Contains(page, "admin@example.com") {
		t.Errorf("the admin's audit page lacks rows:\n%s", page)
	}
	page = e.getAs(tm["admin"], "/audit?project="+strconv.FormatInt(other.ID, 10))
	if strings.Contains(page, "mine-marker") || !strings.Contains(page, "theirs-marker") {
		t.Errorf("the project filter did not filter:\n%s", page)
	}
	page = e.getAs(tm["admin"], "/audit?action=sign_in&actor=olga")
	if strings.Contains(page, "mine-marker") || len(rowsOn.FindAllString(page, -1)) != 1 || !strings.Contains(page, "owner@example.com") {
		t.Errorf("the action and actor filters did not filter:\n%s", page)
	}
	for _, path := range []string{"/audit", "/audit/export"} {
		resp := e.do(tm["member"], http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s as a plain member: status %d, want 403", path, resp.StatusCode)
		}
		if body := e.getAs(tm["member"], path); strings.Contains(body, "marker") {
			t.Errorf("GET %s as a plain member shows rows:\n%s", path, body)
		}
	}
}

// TestAuditTokensAndMembers: tokens made and revoked, members added and
// their roles changed are recorded with the project and who did it.
func TestAuditTokensAndMembers(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	tm := newTeam(e)
	e.postAs(e.user, "/tokens", url.Values{"name": {"laptop"}})
	mk := e.waitAudit(audit.TokenCreate, 1)[0]
	if mk.Target != "laptop" || mk.ActorID != e.user.ID {
		t.Errorf("token row = %+v", mk)
	}
	tokens, err := e.st.APITokens(t.Context(), e.user.ID)
	if err != nil || len(tokens) != 1 {
		t.Fatalf("tokens = %v, %v", tokens, err)
	}
	e.postAs(e.user, "/tokens/"+strconv.FormatInt(tokens[0].ID, 10)+"/revoke", url.Values{})
	if rv := e.waitAudit(audit.TokenRevoke, 1)[0]; !strings.Contains(string(rv.Detail), strconv.FormatInt(tokens[0].ID, 10)) {
		t.Errorf("token revoke row = %+v (%s)", rv, rv.Detail)
	}
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings/members"
	e.postAs(tm["owner"], pp, url.Values{"email": {"outsider@example.com"}, "role": {roleViewer}})
	add := e.waitAudit(audit.MemberAdd, 1)[0]
	if add.ActorID != tm["owner"].ID || add.ProjectID != e.project.ID || add.Target != "outsider@example.com" {
		t.Errorf("member add row = %+v", add)
	}
	e.postAs(tm["owner"], pp+"/"+strconv.FormatInt(tm["outsider"].ID, 10), url.Values{"role": {roleMember}})
	if ch := e.waitAudit(audit.RoleChange, 1)[0]; !strings.Contains(string(ch.Detail), `"member"`) {
		t.Errorf("role change row = %+v (%s)", ch, ch.Detail)
	}
}

// TestAuditWorktreeMerge: a worktree merge is recorded with the session,
// the branch and the outcome; archiving the session is recorded too.
func TestAuditWorktreeMerge(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
	}, envOptions{quiet: true})
	e.useRepo(gitRepo(t))
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("edit the files")
	w.waitFor(2*time.Minute, "Done editing.")
	e.waitTurnOver(s.ID)
	if resp := e.postAs(e.user, "/sessions/"+s.ID+"/worktree/merge", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("merge: status %d", resp.StatusCode)
	}
	row := e.waitAudit(audit.WorktreeMerge, 1)[0]
	if row.SessionID != s.ID || row.ActorID != e.user.ID || row.Target == "" || !strings.Contains(string(row.Detail), `"merged"`) {
		t.Errorf("merge row = %+v (%s)", row, row.Detail)
	}
	e.postAs(e.user, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}})
	if row := e.waitAudit(audit.SessionArchive, 1)[0]; row.SessionID != s.ID || !strings.Contains(string(row.Detail), "true") {
		t.Errorf("archive row = %+v (%s)", row, row.Detail)
	}
}

// TestAuditFailureDoesNotBlock: with the audit table gone, sign-ins and
// token changes still work; the failed writes are logged, not returned.
func TestAuditFailureDoesNotBlock(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	if err := e.exec(`ALTER TABLE audit_log RENAME TO audit_log_away`); err != nil {
		t.Fatal(err)
	}
	u := e.addUser("late@example.com", "Late", false) // signs in through the form; fails the test if refused
	if resp := e.postAs(u, "/tokens", url.Values{"name": {"laptop"}}); resp.StatusCode != http.StatusOK {
		t.Errorf("token create without the audit table: status %d, want 200", resp.StatusCode)
	}
}

// TestAuditPushAnswer: an answer from a push notification's action is
// recorded with the surface push and the device it came from.
func TestAuditPushAnswer(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	_, m := e.nextPush(60 * time.Second)
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("answer from the notification: %d %q", code, text)
	}
	row := e.waitAudit(audit.AskAnswer, 1)[0]
	if row.Surface != audit.Push || row.ActorID != e.user.ID || row.Target != m.InputID || !strings.Contains(string(row.Detail), "you's phone") {
		t.Errorf("push answer row = %+v (%s); want surface push via you's phone", row, row.Detail)
	}
}
