package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
	"parley/store"
)

// keptOnPurpose are the tables that name a deleted session and keep it:
// the audit trail, the tombstones, and the spending (turn_costs: a
// deleted session's spending still counts).
var keptOnPurpose = map[string]bool{"audit_log": true, "deleted_sessions": true, "turn_costs": true}

// sessionRows counts, in every table with a session_id column (those of
// later migrations too) but keptOnPurpose, the rows naming the session,
// and the rows naming its asks (input_id).
func (e *env) sessionRows(id string) map[string]int {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(e.t.Context())
	var own int
	if err := conn.QueryRow(e.t.Context(), `SELECT count(*) FROM sessions WHERE id = $1`, id).Scan(&own); err != nil {
		e.t.Fatal(err)
	}
	n := map[string]int{"sessions": own}
	inputs := `(SELECT id::text FROM inputs WHERE session_id = $1)`
	for _, col := range []string{"session_id", "input_id"} {
		rows, _ := conn.Query(e.t.Context(), `SELECT table_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND column_name = $1`, col)
		tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			e.t.Fatal(err)
		}
		for _, table := range tables {
			if keptOnPurpose[table] {
				continue
			}
			q := `SELECT count(*) FROM ` + pgx.Identifier{table}.Sanitize() + ` WHERE session_id::text = $1`
			if col == "input_id" {
				q = `SELECT count(*) FROM ` + pgx.Identifier{table}.Sanitize() + ` WHERE input_id::text IN ` + inputs
			}
			var c int
			if err := conn.QueryRow(e.t.Context(), q, id).Scan(&c); err != nil {
				e.t.Fatalf("count %s: %v", table, err)
			}
			n[table] += c
		}
	}
	return n
}

// wantSessionGone checks that nothing of the deleted session is left: no
// row names it, its worktree, branch and the CLI's transcript are gone,
// and the trail and its tombstone say it was deleted.
func (e *env) wantSessionGone(sess store.Session, repo string) {
	e.t.Helper()
	for table, c := range e.sessionRows(sess.ID) {
		if c != 0 {
			e.t.Errorf("%d rows of %s still name the deleted session", c, table)
		}
	}
	if _, err := os.Stat(WorktreeDir(e.dataDir, e.project.ID, sess.ID)); !errors.Is(err, os.ErrNotExist) {
		e.t.Errorf("the worktree is still on disk: %v", err)
	}
	if repo != "" {
		if out := runGit(e.t.(*testing.T), repo, "branch", "--list", "parley/"+sess.ID); out != "" {
			e.t.Errorf("the branch is still there: %q", out)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(e.srv.launcher.ConfigDirOf(e.project), "projects", "*", sess.ClaudeSessionID+".jsonl")); len(files) > 0 {
		e.t.Errorf("the CLI's transcript is still there: %v", files)
	}
	tomb, err := e.st.DeletedSessionOf(e.t.Context(), sess.ID)
	if err != nil || tomb.CleanedAt == nil {
		e.t.Errorf("tombstone %+v, %v; want one, cleaned", tomb, err)
	}
	rows, err := e.srv.auditLog().List(e.t.Context(), store.AuditFilter{ProjectID: e.project.ID})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.Action == "session_delete" && r.SessionID == sess.ID {
			return
		}
	}
	e.t.Errorf("the audit trail does not record the delete: %+v", rows)
}

// Only the project's owners (and admins) delete a session: a member or a
// viewer is refused (403), an outsider finds nothing (404), and a forged
// form without the CSRF token is refused (403); the session is intact.
// The owner's delete works; a second one says it is gone already.
func TestSessionDeleteOnlyByOwner(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	tm := newTeam(e)
	sess := e.newSession()
	path := "/sessions/" + sess.ID + "/delete"
	for _, c := range []struct {
		role string
		want int
	}{{"member", 403}, {"viewer", 403}, {"outsider", 404}, {"anonymous", 401}} {
		if resp := e.postAs(tm[c.role], path, nil); resp.StatusCode != c.want {
			t.Errorf("delete as %s: %d, want %d", c.role, resp.StatusCode, c.want)
		}
		if c.role != "anonymous" {
			if resp := e.do(tm[c.role], "GET", path, nil); resp.StatusCode != c.want {
				t.Errorf("confirmation page as %s: %d, want %d", c.role, resp.StatusCode, c.want)
			}
		}
	}
	if resp := e.do(tm["owner"], "POST", path, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("forged delete without the CSRF token: %d, want 403", resp.StatusCode)
	}
	if n := e.sessionRows(sess.ID); n["sessions"] != 1 {
		t.Fatalf("a refused delete deleted the session: %v", n)
	}
	if resp := e.postAs(tm["owner"], path, nil); resp.StatusCode != 200 {
		t.Fatalf("owner's delete: %d", resp.StatusCode)
	}
	e.wantSessionGone(sess, "")
	resp := e.postAs(tm["owner"], path, nil)
	body := readBody(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(body, "deleted already") {
		t.Errorf("second delete: %d\n%s", resp.StatusCode, body)
	}
	// Who may see the project reads what happened; an outsider, nothing.
	if body := e.getAs(tm["viewer"], "/sessions/"+sess.ID); !strings.Contains(body, "This session was deleted on") {
		t.Errorf("the viewer's page of the deleted session:\n%s", body)
	}
	if body, nf := e.getAs(tm["outsider"], "/sessions/"+sess.ID), e.getAs(tm["outsider"], "/projects/999999"); body != nf {
		t.Errorf("the outsider learns more of a deleted session than of a missing project:\n%s", body)
	}
}

// Deleting a session whose Claude is working (here: waiting on an ask)
// ends its process, and the ask goes with the session.
func TestSessionDeleteStopsALiveRun(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks."},
	}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("ask me")
	e.waitInput(w, sess.ID)
	pid := e.pidOf(sess.ID)
	watcher := e.rawDial(owner, sess.ID)
	inbox := e.dialPathAs(e.user, "/inbox/ws")
	inbox.waitFor(10*time.Second, `data-count="1"`)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("claude (pid %d) is not running before the delete: %v", pid, err)
	}
	if body := e.getAs(owner, "/sessions/"+sess.ID+"/delete"); !strings.Contains(body, `id="delete-running"`) || !strings.Contains(body, "1 question still waits") {
		t.Errorf("the confirmation does not say Claude works and a question waits:\n%s", body)
	}
	start := time.Now()
	if resp := e.postAs(owner, "/sessions/"+sess.ID+"/delete", nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	t.Logf("delete with a live run took %v", time.Since(start))
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("claude (pid %d) outlived its session's delete: %v", pid, err)
	}
	if _, live := e.sup.Live(sess.ID); live {
		t.Error("the supervisor still has a run of the deleted session")
	}
	inbox.waitFor(10*time.Second, `data-count="0"`) // the ask left the open inbox
	if code, reason := closeOf(t, watcher); code != closeRemoved || reason != reasonDeleted {
		t.Errorf("an open page's socket closed with %d %q, want %d %q", code, reason, closeRemoved, reasonDeleted)
	}
	e.wantSessionGone(sess, "")
}

// rawDial opens a session's socket as u, for its close frame.
func (e *env) rawDial(u *testUser, sessionID string) *websocket.Conn {
	e.t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.web.URL, "http")+"/sessions/"+sessionID+"/ws", e.header(u))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return conn
}

// closeOf reads conn until it closes and returns the close frame's code
// and reason.
func closeOf(t *testing.T, conn *websocket.Conn) (int, string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			t.Fatalf("the socket ended without a close frame: %v", err)
		}
	}
}

// A delete racing a first message (the worktree and branch not made yet
// when the delete starts) or a second delete leaves no half session: no
// row, no worktree, no branch, no claude process of it, whichever comes
// first; both deletes answer 200.
func TestSessionDeleteRacesAMessage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hi."}, {Text: "Hi."}, {Text: "Hi."}, {Text: "Hi."}}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	for _, delay := range []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond} {
		sess := e.newSession()
		w := e.dial(sess.ID, 0)
		w.prompt("hello")
		time.Sleep(delay)
		codes := make(chan int, 2)
		for range 2 {
			go func() { codes <- e.postAs(owner, "/sessions/"+sess.ID+"/delete", nil).StatusCode }()
		}
		for range 2 {
			if c := <-codes; c != 200 {
				t.Errorf("delay %v: a delete answered %d", delay, c)
			}
		}
		time.Sleep(2 * time.Second) // a start in flight lands, or not
		if r, live := e.sup.Live(sess.ID); live {
			t.Errorf("delay %v: a run of the deleted session lives on (%+v)", delay, r)
		}
		e.wantSessionGone(sess, repo)
	}
}

// A first run's start that makes the session's worktree after a delete
// removed the session (and found no worktree yet) takes the worktree and
// branch away again: the start fails, nothing is left. Before, the
// worktree and branch stayed (TestSessionDeleteRacesAMessage, at random).
func TestSessionDeleteWhileAFirstRunMakesItsWorktree(t *testing.T) {
	git, held := heldGit(t, "add") // git worktree add
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, gitBin: git})
	repo := gitRepo(t)
	e.useRepo(repo)
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	sess := e.newSession()
	started := make(chan error, 1)
	go func() {
		_, err := e.srv.launcher.Options(context.WithoutCancel(t.Context()), sess)
		started <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(held, "held")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the start never made the worktree")
		}
	}
	if resp := e.postAs(owner, "/sessions/"+sess.ID+"/delete", nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if err := os.WriteFile(filepath.Join(held, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-started; !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the start of a deleted session: %v, want not found", err)
	}
	e.wantSessionGone(sess, repo)
}
