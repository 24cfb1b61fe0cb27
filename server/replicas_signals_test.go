package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/asks"
	"parley/runner/fakeapi"
)

// postTo sends a form as u to replica r, with u's CSRF token.
func (e *env) postTo(r *replica, u *testUser, path string, form url.Values) {
	e.t.Helper()
	form.Set(csrfField, u.CSRF)
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, r.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.url)
	req.Header.Set("Cookie", sessionCookie+"="+u.Cookie)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("POST %s on %s: %s", path, r.name, res.Status)
	}
}

// waitFrame reads frames until one satisfies ok, and returns it.
func (w *ws) waitFrame(timeout time.Duration, what string, ok func(string) bool) string {
	w.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case f, open := <-w.frames:
			if !open {
				w.t.Fatalf("websocket closed while waiting for %s", what)
			}
			if ok(f) {
				return f
			}
		case <-deadline:
			w.t.Fatalf("no frame with %s within %s", what, timeout)
		}
	}
}

// waitClosed waits until the server closes the socket; it returns how long
// that took.
func (w *ws) waitClosed(timeout time.Duration, what string) time.Duration {
	w.t.Helper()
	start := time.Now()
	deadline := time.After(timeout)
	for {
		select {
		case _, open := <-w.frames:
			if !open {
				return time.Since(start)
			}
		case <-deadline:
			w.t.Fatalf("%s: the socket was still open after %s", what, timeout)
		}
	}
}

// presenceIs says a frame is the presence list holding exactly want (in
// order).
func presenceIs(want ...string) func(string) bool {
	return func(f string) bool {
		i := strings.Index(f, `id="presence"`)
		if i < 0 {
			return false
		}
		f = f[i:]
		if j := strings.Index(f, "</ul>"); j >= 0 {
			f = f[:j]
		}
		var items []string
		for _, part := range strings.Split(f, "<li>")[1:] {
			items = append(items, strings.SplitN(part, "</li>", 2)[0])
		}
		return fmt.Sprint(items) == fmt.Sprint(want)
	}
}

// TestReplicasPresenceAndStops: with two real replicas, a session's
// viewers are listed on both whichever replica each page is connected to;
// removing a member through one replica closes that member's socket on the
// other at once; archiving a session through B ends its run on A and
// closes its sockets there; archiving the project through B ends the
// project's runs on A.
func TestReplicasPresenceAndStops(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch p"), bashStep("touch q")}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	bob := e.member("bob@example.com", "Bob", "member")
	olive := e.member("olive@example.com", "Olive", "owner")
	s := e.newSession()
	me := e.user.Name
	wa := e.dialReplica(a, e.user, s.ID)
	wa.waitFrame(20*time.Second, "me alone", presenceIs(me))
	wb := e.dialReplica(b, bob, s.ID)
	both := presenceIs("Bob", me)
	if me < "Bob" {
		both = presenceIs(me, "Bob")
	}
	began := time.Now()
	wa.waitFrame(20*time.Second, "Bob on B listed on A", both)
	t.Logf("Bob's page on B listed on A after %s", time.Since(began).Round(time.Millisecond))
	wb.waitFrame(20*time.Second, "me on A listed on B", both)

	wb.conn.Close()
	wa.waitFrame(20*time.Second, "Bob gone from A's list", presenceIs(me))

	// Bob, on B, is removed from the project through A.
	wb2 := e.dialReplica(b, bob, s.ID)
	wb2.waitFrame(20*time.Second, "both on B again", both)
	e.postTo(a, olive, fmt.Sprintf("/projects/%d/settings/members/%d/remove", e.project.ID, bob.ID), url.Values{})
	took := wb2.waitClosed(20*time.Second, "Bob removed through A")
	t.Logf("Bob's socket on B closed %s after his removal through A", took.Round(time.Millisecond))

	// A session whose run waits on A is archived through B.
	wa.prompt("make p")
	e.waitInput(wa, s.ID)
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	e.postTo(b, e.user, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}})
	wa.waitClosed(20*time.Second, "session archived through B")
	if _, open := e.runsOf(s.ID); open != 0 {
		t.Errorf("after the archive through B, %d runs of the session are open on A", open)
	}

	// A run of another session on A; its project is archived through B.
	s2 := e.newSession()
	wa2 := e.dialReplica(a, e.user, s2.ID)
	wa2.prompt("make q")
	e.waitInput(wa2, s2.ID)
	e.postTo(b, olive, fmt.Sprintf("/projects/%d/archive", e.project.ID), url.Values{"archived": {"1"}})
	deadline := time.Now().Add(20 * time.Second)
	for _, open := e.runsOf(s2.ID); open != 0; _, open = e.runsOf(s2.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the project was archived through B, its run on A is still open")
		}
		time.Sleep(50 * time.Millisecond) // a test's own deadline loop on the database
	}
}

// TestReplicasTerminalAnswerAppliedByOwner: a `parley asks answer` sent
// while two replicas run is applied by the replica owning the session
// only (no request is forwarded between replicas), and reaches its live
// process as the tool's result, once.
func TestReplicasTerminalAnswerAppliedByOwner(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch t"), {Text: "Terminal answer arrived: " + fakeapi.ToolResultPlaceholder}},
		envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa, wb := e.dialReplica(a, e.user, s.ID), e.dialReplica(b, e.user, s.ID)
	wb.prompt("make t") // through B: B takes the lease and runs it
	in := e.waitInput(wb, s.ID)
	if got := e.owner(s.ID); got != b.id {
		t.Fatalf("owner %q, want B (%s)", got, b.id)
	}
	var forwardedBefore int64
	e.queryRow(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM cluster_requests_id_seq`, nil, &forwardedBefore)
	c, err := asks.NewDB(t.Context(), e.st, e.user.Email)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := runAsks(t, c, "answer", in.ID, "--allow")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "Answered") {
		t.Errorf("answer said %q", msg)
	}
	e.wantToolResult(2, "(Bash completed with no output)", false)
	wa.waitFor(60*time.Second, "Terminal answer arrived")
	var forwardedAfter int64
	e.queryRow(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM cluster_requests_id_seq`, nil, &forwardedAfter)
	if forwardedAfter != forwardedBefore {
		t.Errorf("%d requests were forwarded between replicas for one terminal answer, want none: only the owner applies it",
			forwardedAfter-forwardedBefore)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	if all, _ := e.runsOf(s.ID); all != 1 {
		t.Errorf("%d runs, want B's one", all)
	}
}

// TestReplicasWorktreeMergeStopsTheRunEverywhere: merging a session's
// worktree through B ends the session's idle process on A, and only then
// commits and merges: nothing of A's claude can write into the worktree
// while git works on it. The merge lands in the base.
func TestReplicasWorktreeMergeStopsTheRunEverywhere(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
	}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("edit the files")
	wa.waitFor(90*time.Second, "Done editing.")
	e.waitTurnOver(s.ID)
	if _, open := e.runsOf(s.ID); open != 1 || e.owner(s.ID) != a.id {
		t.Fatalf("%d open runs, owner %q; want A's idle process (%s)", open, e.owner(s.ID), a.id)
	}
	e.postTo(b, e.user, "/sessions/"+s.ID+"/worktree/merge", url.Values{})
	if _, open := e.runsOf(s.ID); open != 0 {
		t.Errorf("after the merge through B, %d runs of the session are open on A", open)
	}
	if got := runGit(t, repo, "show", "main:b.txt"); got != "hello" {
		t.Errorf("main's b.txt = %q after the merge, want the session's work", got)
	}
}
