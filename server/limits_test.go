package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"parley/runner/fakeapi"
)

func TestSessionRateLimit(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "ok"}}, envOptions{quiet: true, perTurn: true, limits: Limits{SessionsPerMinute: 2}})
	path := "/projects/" + pid(e) + "/sessions"
	for i := range 2 {
		if resp := e.postAs(e.user, path, url.Values{"text": {"task"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("session %d: %d %s", i+1, resp.StatusCode, readAll(resp))
		}
	}
	resp := e.postAs(e.user, path, url.Values{"text": {"task"}})
	if b := readAll(resp); resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(b, "You are starting sessions too quickly (the limit is 2 a minute)") {
		t.Fatalf("3rd session in a minute: %d %.300q; want 429 with the limit", resp.StatusCode, b)
	}
	// The limit is per user: another member still starts one.
	other := e.member("other@example.com", "Other", roleMember)
	if resp := e.postAs(other, path, url.Values{"text": {"task"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("another member's session: %d", resp.StatusCode)
	}
}

func TestPromptRateLimit(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "ok"}}, envOptions{quiet: true, perTurn: true, limits: Limits{PromptsPerMinute: 1}})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("first")
	w.waitFor(60*time.Second, "Done ·")
	w.prompt("second")
	w.waitFor(10*time.Second, "You are sending messages too quickly (the limit is 1 a minute)")
	if n := count(e.eventTypes(s.ID), "prompt"); n != 1 {
		t.Fatalf("%d prompts in the log; want 1 (the second refused)", n)
	}
}

func TestWebSocketsPerUserCap(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: Limits{WSPerUser: 2}})
	s := e.newSession()
	a := e.dial(s.ID, 0)
	e.dialPathAs(e.user, "/inbox/ws")
	a.waitFor(10*time.Second, `id="presence"`) // a is served
	third := e.dialPathAs(e.user, "/sessions/"+s.ID+"/ws")
	for range third.frames {
	}
	_, _, err := third.conn.ReadMessage()
	var ce *websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, "Too many open Parley tabs (the limit is 2)") {
		t.Fatalf("third socket ended with %v; want a 1008 close naming the limit", err)
	}
	// Closing one frees its place (once the server has seen it close).
	a.conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !served(e.dialAs(e.user, s.ID, 0)) {
		if time.Now().After(deadline) {
			t.Fatal("a freed socket place was not given back")
		}
	}
}

// served reports whether the socket gets a frame (true) or is closed (false).
func served(w *ws) bool {
	select {
	case _, ok := <-w.frames:
		return ok
	case <-time.After(10 * time.Second):
		return false
	}
}

func asCloseError(err error, ce **websocket.CloseError) bool {
	c, ok := err.(*websocket.CloseError)
	*ce = c
	return ok
}

// With one slot, sessions wait in line: each page says its place, the line
// moves as runs end, every waiting message is answered in order, and no
// more than one claude process ever lives.
func TestSlotQueueShowsPlaceAndMoves(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{
		{Text: "A is working", Hold: hold},
		{Text: "B answered"},
		{Text: "C answered"},
	}, envOptions{quiet: true, maxRuns: 1})
	a, b, c := e.newSession(), e.newSession(), e.newSession()
	wa := e.dial(a.ID, 0)
	wa.prompt("task A")
	wa.waitFor(60*time.Second, "A is working")
	wb, wc := e.dial(b.ID, 0), e.dial(c.ID, 0)
	wb.prompt("task B")
	wb.waitFor(10*time.Second, "Waiting for a free slot, 1st in line")
	wc.prompt("task C")
	wc.waitFor(10*time.Second, "Waiting for a free slot, 2nd in line")
	if page := e.getAs(e.user, "/sessions/"+c.ID); !strings.Contains(page, "Waiting for a free slot, 2nd in line") {
		t.Errorf("C's page does not show its place in line")
	}
	if got := e.sup.LiveRuns(); got != 1 {
		t.Errorf("%d live runs with a cap of 1", got)
	}
	if all, _ := e.lineItems(b.ID); all != 1 {
		t.Errorf("B's waiting prompt is kept in line %d times, want once", all)
	}
	close(hold) // A's turn ends; A is idle and gives its slot to B
	wb.waitFor(60*time.Second, "B answered")
	wc.waitFor(60*time.Second, "C answered")
	if n := maxOverlappingRuns(t, e); n != 1 {
		t.Errorf("at most %d claude processes lived at once; want 1", n)
	}
	for _, s := range []string{a.ID, b.ID, c.ID} {
		if n := count(e.eventTypes(s), "prompt"); n != 1 {
			t.Errorf("session %s has %d prompts; want 1", s, n)
		}
		if all, _ := e.lineItems(s); all != 0 {
			t.Errorf("session %s still has %d items kept in line once answered", s, all)
		}
	}
}

// maxOverlappingRuns is the most runs whose lifetimes (as recorded in
// Postgres: from after the process started to after it exited) overlap.
func maxOverlappingRuns(t *testing.T, e *env) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	err = conn.QueryRow(t.Context(), `
		SELECT coalesce(max(c), 0) FROM (
			SELECT r1.id, count(*) AS c FROM runs r1 JOIN runs r2
			ON r2.started_at <= r1.started_at AND (r2.ended_at IS NULL OR r2.ended_at > r1.started_at)
			GROUP BY r1.id) x`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
