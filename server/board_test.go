package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
	"parley/store"
)

// startBoards runs the server's board feed as serve does (WatchBoards)
// and waits until it listens.
func startBoards(t testing.TB, e *env) {
	t.Helper()
	ready := make(chan struct{}, 1)
	e.srv.boards.OnReady(func() { markDue(ready) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.WatchBoards(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the board feed did not start listening")
	}
}

// askIn opens a pending ask in the session, as a run does.
func askIn(t testing.TB, e *env, sessionID string, seq int64) store.Input {
	t.Helper()
	in := store.Input{SessionID: sessionID, Kind: "question", Payload: json.RawMessage(`{"question":"Which colour?"}`)}
	ev := store.Event{SessionID: sessionID, Seq: seq, Type: "input_requested", Payload: json.RawMessage(`{}`)}
	if err := e.st.OpenInput(t.Context(), in, ev); err != nil {
		t.Fatal(err)
	}
	ins, err := e.st.PendingInputs(t.Context(), sessionID)
	if err != nil || len(ins) == 0 {
		t.Fatalf("pending inputs %v, %v", ins, err)
	}
	return ins[0]
}

// dialRefused dials a WebSocket path as u and returns the HTTP status of
// the refused handshake (0 if it was accepted).
func (e *env) dialRefused(u *testUser, path string) int {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + path
	conn, resp, err := websocket.DefaultDialer.Dial(url, e.header(u))
	if err == nil {
		conn.Close()
		return 0
	}
	if resp == nil {
		e.t.Fatalf("dial %s: %v", path, err)
	}
	return resp.StatusCode
}

// TestBoardSocketsFollowStatus: a session's status and asks, changed in
// the database, reach a member's sidebar and board sockets as the
// session's new place; an outsider's board hears nothing of it, and the
// outsider's sidebar socket, page and fragment are refused.
func TestBoardSocketsFollowStatus(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	startBoards(t, e)
	outsider := e.addUser("out@example.com", "Olga Outsider", false)
	other, err := e.st.CreateProject(t.Context(), "Other project", outsider.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetMember(t.Context(), other.ID, outsider.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	open := e.newSession()
	pid := strconv.FormatInt(e.project.ID, 10)
	sb := e.dialPathAs(e.user, "/projects/"+pid+"/sidebar/ws?current="+open.ID)
	sb.waitFor(10*time.Second, `id="sb-list"`, "sb-"+s.ID)
	bd := e.dialPathAs(e.user, "/board/ws")
	bd.waitFor(10*time.Second, `id="board-needs"`)
	foreign := e.dialPathAs(outsider, "/board/ws")
	foreign.waitFor(10*time.Second, `id="board-needs"`)

	if err := e.st.SetSessionStatus(t.Context(), s.ID, "running"); err != nil {
		t.Fatal(err)
	}
	sb.waitFor(10*time.Second, `data-into="sb-list"`, `id="sb-`+s.ID+`"`, `data-status="running"`)
	bd.waitFor(10*time.Second, `data-into="board-running"`, `id="bd-`+s.ID+`"`)

	in := askIn(t, e, s.ID, 1)
	if err := e.st.SetSessionStatus(t.Context(), s.ID, "waiting"); err != nil {
		t.Fatal(err)
	}
	sb.waitFor(10*time.Second, `data-status="needs-you"`, `id="sb-needs"`, "1 needs you")
	bd.waitFor(10*time.Second, `data-into="board-needs"`, `id="board-needs-count"`)

	if err := e.st.SetSessionStatus(t.Context(), s.ID, "completed"); err != nil {
		t.Fatal(err)
	}
	resolved := store.Event{SessionID: s.ID, Seq: 2, Type: "input_resolved", Payload: json.RawMessage(`{}`)}
	if _, err := e.st.ResolveInput(t.Context(), in.ID, "answered", json.RawMessage(`{}`), "you", resolved); err != nil {
		t.Fatal(err)
	}
	sb.waitFor(10*time.Second, `data-status="completed"`, "nothing needs you")
	bd.waitFor(10*time.Second, `data-into="board-recent"`)

	select {
	case f := <-foreign.frames:
		t.Errorf("an outsider's board socket got a frame about another project:\n%s", f)
	case <-time.After(300 * time.Millisecond):
	}
	if code := e.dialRefused(outsider, "/projects/"+pid+"/sidebar/ws"); code != http.StatusNotFound {
		t.Errorf("an outsider's sidebar socket: status %d, want 404", code)
	}
	if resp := e.do(outsider, http.MethodGet, "/projects/"+pid+"/sidebar", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider's sidebar: status %d, want 404", resp.StatusCode)
	}
	if page := e.getAs(outsider, "/"); strings.Contains(page, s.ID) || strings.Contains(page, open.ID) {
		t.Errorf("an outsider's board lists a session of a project they are not in")
	}
	if page := e.getAs(e.user, "/"); !strings.Contains(page, `id="bd-`+s.ID+`"`) {
		t.Errorf("the member's board lacks the session that finished:\n%s", page)
	}
}
