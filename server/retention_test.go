package server

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
	"parley/sessiondelete"
	"parley/store"
)

// backdate moves the sessions' last activity (their row and their log)
// days into the past.
func (e *env) backdate(days int, ids ...string) {
	e.t.Helper()
	conn, err := pgx.Connect(e.t.Context(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(e.t.Context())
	for _, q := range []string{
		`UPDATE sessions SET updated_at = now() - make_interval(days => $2) WHERE id = ANY($1::uuid[])`,
		`UPDATE events SET created_at = now() - make_interval(days => $2) WHERE session_id = ANY($1::uuid[])`,
	} {
		if _, err := conn.Exec(e.t.Context(), q, ids, days); err != nil {
			e.t.Fatal(err)
		}
	}
}

// Retention, off by default, deletes nothing; set to 1 day, it deletes a
// session whose last activity was 2 days ago (its rows, worktree, branch
// and transcript, as an owner's delete), and keeps a fresh one, one with
// a pending ask, one with a live run and one with a message in line,
// however old.
func TestRetentionDeletesIdleSessions(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Done."}}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	ctx := t.Context()
	idle := e.newSession()
	w := e.dial(idle.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "turn-result")
	e.waitTranscript(idle, "Done.")
	e.sup.Stop(idle.ID) // the idle timeout would end it
	idle, _ = e.st.GetSession(ctx, idle.ID)
	if wt, _ := e.st.SessionWorktree(ctx, idle.ID); wt.Branch == "" {
		t.Fatal("the run made no worktree")
	}
	fresh, asking, running := e.newSession(), e.newSession(), e.newSession()
	if err := e.st.OpenInput(ctx, store.Input{SessionID: asking.ID, Kind: "question", Payload: json.RawMessage(`{}`)},
		store.Event{SessionID: asking.ID, Seq: 1, Type: "ask", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.StartRun(ctx, running.ID, 999999); err != nil {
		t.Fatal(err)
	}
	queued := e.newSession() // a message waits in line for a claude slot
	e.queryRow(`INSERT INTO session_line (session_id, replica_id, kind, text) VALUES ($1, '', 'prompt', 'hi') RETURNING 1`,
		[]any{queued.ID}, new(int))
	e.backdate(2, idle.ID, asking.ID, running.ID, queued.ID)

	del := e.srv.SessionDeleter()
	if n, err := del.Sweep(ctx); n != 0 || err != nil {
		t.Fatalf("retention off: swept %d, %v", n, err)
	}
	if body := e.getAs(owner, "/projects/"+pid(e)+"/settings"); !strings.Contains(body, `id="retention_days"`) {
		t.Fatal("the settings page has no retention field")
	}
	if resp := e.postAs(owner, "/projects/"+pid(e)+"/settings/retention", url.Values{"retention_days": {"0"}}); resp.StatusCode != 400 {
		t.Errorf("retention 0 days: %d, want 400", resp.StatusCode)
	}
	if resp := e.postAs(e.user, "/projects/"+pid(e)+"/settings/retention", url.Values{"retention_days": {"1"}}); resp.StatusCode != 403 {
		t.Errorf("a member set retention: %d, want 403", resp.StatusCode)
	}
	if resp := e.postAs(owner, "/projects/"+pid(e)+"/settings/retention", url.Values{"retention_days": {"1"}}); resp.StatusCode != 303 {
		t.Fatalf("set retention: %d", resp.StatusCode)
	}
	start := time.Now()
	if n, err := del.Sweep(ctx); n != 1 || err != nil {
		t.Fatalf("retention 1 day: swept %d, %v; want 1", n, err)
	}
	t.Logf("a sweep deleting one worktree session took %v", time.Since(start))
	e.wantSessionGone(idle, repo)
	for _, s := range []store.Session{fresh, asking, running, queued} {
		if n := e.sessionRows(s.ID); n["sessions"] != 1 {
			t.Errorf("retention deleted session %s (%s)", s.ID, map[string]string{fresh.ID: "fresh", asking.ID: "pending ask", running.ID: "live run", queued.ID: "work in line"}[s.ID])
		}
	}
	if n, err := del.Sweep(ctx); n != 0 || err != nil {
		t.Errorf("a second sweep: %d, %v; want nothing", n, err)
	}
	if body := e.getAs(owner, "/projects/"+pid(e)+"/settings"); !strings.Contains(body, `value="1"`) {
		t.Error("the settings page does not show the saved retention")
	}
}

// One replica sweeps at a time: while another holds the retention lock,
// a sweep does nothing.
func TestRetentionSweepsOnOneReplica(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	ctx := t.Context()
	s := e.newSession()
	if err := e.st.SetProjectRetention(ctx, e.project.ID, 1); err != nil {
		t.Fatal(err)
	}
	e.backdate(2, s.ID)
	other, err := store.Open(ctx, e.dbURL) // another replica's pool
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	release, ok, err := other.TryRetentionLock(ctx)
	if !ok || err != nil {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	if n, err := e.srv.SessionDeleter().Sweep(ctx); n != 0 || err != nil {
		t.Errorf("swept %d, %v while another replica held the lock", n, err)
	}
	release()
	if n, err := e.srv.SessionDeleter().Sweep(ctx); n != 1 || err != nil {
		t.Errorf("swept %d, %v once the lock was free; want 1", n, err)
	}
}

// A start that read the session just before its delete may make its
// worktree, branch and transcript after the delete cleaned up: the next
// sweep (within the hour) removes them.
func TestSweepCleansAfterAStragglerStart(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	ctx := t.Context()
	sess := e.newSession()
	del := e.srv.SessionDeleter()
	if _, err := del.Delete(ctx, sess.ID, sessiondelete.Actor{Name: "t", Surface: "page"}); err != nil {
		t.Fatal(err)
	}
	dir := WorktreeDir(e.dataDir, e.project.ID, sess.ID)
	runGit(t, repo, "worktree", "add", "-q", "-b", "parley/"+sess.ID, dir)
	jsonl := filepath.Join(e.srv.launcher.ConfigDirOf(e.project), "projects", "-straggler", sess.ClaudeSessionID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(jsonl), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsonl, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := del.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantSessionGone(sess, repo)
}

// A replica whose pool has one connection (pool_max_conns=1) sweeps
// without holding the retention lock: holding it, the sweep would wait for
// a connection of its own forever, and so would every request.
func TestRetentionSweepOnAPoolOfOne(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	ctx := t.Context()
	s := e.newSession()
	if err := e.st.SetProjectRetention(ctx, e.project.ID, 1); err != nil {
		t.Fatal(err)
	}
	e.backdate(2, s.ID)
	sep := "?"
	if strings.Contains(e.dbURL, "?") {
		sep = "&"
	}
	one, err := store.Open(ctx, e.dbURL+sep+"pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	del := sessiondelete.New(one, localStops{sup: e.sup, hub: e.srv.hub}, deleteDisk{e.srv}, e.srv.log)
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if n, err := del.Sweep(sctx); n != 1 || err != nil {
		t.Errorf("a pool of one swept %d, %v; want 1", n, err)
	}
}
