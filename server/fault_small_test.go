package server

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store/pgtest"
)

// TestFaultAnswerDuringDatabaseRestart answers an open ask while Postgres
// is stopped, from the session page and from the inbox (issue 28, item 6):
// each says the database is away and the answer was not saved, not a
// generic failure; once Postgres is back the same answer goes through.
func TestFaultAnswerDuringDatabaseRestart(t *testing.T) {
	const want = "The database is not reachable; your answer was not saved. Try again in a moment."
	for _, surface := range []string{"page", "inbox"} {
		t.Run(surface, func(t *testing.T) {
			e := newEnv(t, fakeapi.Scenario{bashStep("touch z"), {Text: "Made z."}}, envOptions{quiet: true})
			t.Cleanup(func() { pgtest.Start(t) })
			s := e.newSession()
			w := e.dial(s.ID, 0)
			w.prompt("make z")
			in := e.waitInput(w, s.ID)
			from := w
			answer := func() { w.answer(in, map[string]any{"decision": "allow", "command": "touch z"}) }
			if surface == "inbox" {
				from = e.dialPath("/inbox/ws?list=1")
				from.waitFor(30*time.Second, "inbox-count") // its list is shown before the outage
				answer = func() {
					from.send(map[string]any{"action": "answer", "input_id": in.ID, "session_id": s.ID,
						"decision": "allow", "command": "touch z"})
				}
			}

			pgtest.Stop(t)
			answer()
			from.waitFor(60*time.Second, want)
			pgtest.Start(t)
			// As a person would, try again in a moment: the pool's
			// connections from before the restart are found dead and
			// replaced once idle for a second (pgxpool pings them).
			time.Sleep(2 * time.Second)
			answer()
			e.wantToolResult(2, "(Bash completed with no output)", false)
		})
	}
}

// TestFaultNewSessionDiskFull creates a session while the runtime
// directory (where a run's ask_user config goes) is on a full file system
// (issue 28, item 6): the request is refused with a sentence that says
// why, and no empty session is left behind.
func TestFaultNewSessionDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	e := newEnv(t, fakeapi.Scenario{{Text: "never sent"}}, envOptions{quiet: true})
	dir := e.runtimeDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	// Fill it to the last block.
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()

	resp := e.postAs(e.user, "/projects/"+pid(e)+"/sessions", url.Values{"text": {"hello"}})
	body := readAll(resp)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "no space") {
		t.Errorf("new session on a full disk: %d %q; want 503 saying there is no space", resp.StatusCode, excerpt(body))
	}
	var n int
	e.queryRow(`SELECT count(*) FROM sessions WHERE project_id = $1`, []any{e.project.ID}, &n)
	if n != 0 {
		t.Errorf("%d sessions after the refused request; want none left behind", n)
	}
}

// TestFaultRunEndsDuringDatabaseOutage stops a run while Postgres is
// stopped for longer than a stopping run waits for it (issue 28, item 6):
// once Postgres is back the run is closed with the reason it ended for,
// not left open to be closed later as something else.
func TestFaultRunEndsDuringDatabaseOutage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Here is the reply."}}, envOptions{quiet: true})
	t.Cleanup(func() { pgtest.Start(t) })
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "Here is the reply.", "Done ·")
	if _, open := e.runsOf(s.ID); open != 1 {
		t.Fatalf("%d open runs; want the idle one", open)
	}

	pgtest.Stop(t)
	e.sup.Stop(s.ID) // gives up its writes after its stop grace (10 s)
	time.Sleep(2 * time.Second)
	pgtest.Start(t)

	var reason string
	waitUntil(t, 30*time.Second, "the run to be closed once the database is back", func() bool {
		all, open := e.runsOf(s.ID)
		return all == 1 && open == 0
	})
	e.queryRow(`SELECT coalesce(reason, '') FROM runs WHERE session_id = $1`, []any{s.ID}, &reason)
	if !strings.HasPrefix(reason, "stopped by Parley") {
		t.Errorf("the run was closed with reason %q; want the one it ended for (stopped by Parley)", reason)
	}
}

// excerpt is the start of a long body, for messages.
func excerpt(s string) string {
	if i := strings.Index(s, "<main>"); i >= 0 {
		s = s[i:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// TestFaultRunEndNoticeWhenParleyGoesOn ends a run whose turn Parley
// carries on with (a drain cuts a turn in flight; its work is kept to go
// on at once): the run-end notice must not tell people that their next
// message resumes the session (issue 28, item 6).
func TestFaultRunEndNoticeWhenParleyGoesOn(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	e := newEnv(t, fakeapi.Scenario{{Text: "A long reply that is cut.", Hold: hold}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("write at length")
	if err := e.fake.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	e.sup.Drain(t.Context(), 0)
	page := e.dial(s.ID, 0).waitFor(30*time.Second, "stopped by Parley")
	if strings.Contains(page, "the next message resumes the session") {
		t.Errorf("the run-end notice says the next message resumes the session while Parley carries the turn on:\n%s",
			noticeText(page))
	}
	if !strings.Contains(page, "Parley carries on") {
		t.Errorf("the run-end notice does not say that Parley carries on:\n%s", noticeText(page))
	}
}

// noticeText is the page's text around its "stopped by Parley" notice.
func noticeText(page string) string {
	if i := strings.Index(page, "stopped by Parley"); i >= 0 {
		return page[max(0, i-200):min(len(page), i+300)]
	}
	return "(no such notice)"
}

// TestFaultNewSessionDatabaseAway creates a session while Postgres is
// stopped: the page says the database is away, not that something went
// wrong on the server (issue 28, item 6).
func TestFaultNewSessionDatabaseAway(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	t.Cleanup(func() { pgtest.Start(t) })
	e.getAs(e.user, "/") // the pool has a connection from before the outage too
	pgtest.Stop(t)
	resp := e.postAs(e.user, "/projects/"+pid(e)+"/sessions", url.Values{"text": {"hello"}})
	body := readAll(resp)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "cannot reach its database") {
		t.Errorf("new session with the database away: %d %q; want 503 saying the database cannot be reached",
			resp.StatusCode, excerpt(body))
	}
}

// TestFaultPromptDatabaseAway sends a message from the session page while
// Postgres is stopped: the page says the database is away.
func TestFaultPromptDatabaseAway(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	t.Cleanup(func() { pgtest.Start(t) })
	s := e.newSession()
	w := e.dial(s.ID, 0)
	time.Sleep(time.Second) // its hello is served before the outage
	pgtest.Stop(t)
	w.prompt("hello")
	w.waitFor(60*time.Second, "cannot reach its database")
}

// TestFaultNewSessionOverDiskQuota creates a session in a project over its
// disk quota: it is refused with the quota's sentence, and no empty
// session is left behind (issue 28, item 6).
func TestFaultNewSessionOverDiskQuota(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "never sent"}}, envOptions{quiet: true})
	e.srv.cfg.ProjectDisk = 1 << 20
	ws := WorkspaceDir(e.dataDir, e.project)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "data"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	resp := e.postAs(e.user, "/projects/"+pid(e)+"/sessions", url.Values{"text": {"hello"}})
	body := readAll(resp)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "disk quota") {
		t.Errorf("new session over the disk quota: %d %q; want 403 naming the quota", resp.StatusCode, excerpt(body))
	}
	var n int
	e.queryRow(`SELECT count(*) FROM sessions WHERE project_id = $1`, []any{e.project.ID}, &n)
	if n != 0 {
		t.Errorf("%d sessions after the refused request; want none left behind", n)
	}
}
