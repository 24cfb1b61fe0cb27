package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
)

// dialReplicaPath opens a WebSocket on replica r at path as u.
func (e *env) dialReplicaPath(r *replica, u *testUser, path string) *ws {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(r.url, "http") + path
	h := http.Header{"Origin": {r.url}, "Cookie": {sessionCookie + "=" + u.Cookie}}
	conn, _, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		e.t.Fatalf("dial %s: %v", url, err)
	}
	w := &ws{t: e.t, conn: conn, frames: make(chan string, 4096)}
	go func() {
		defer close(w.frames)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			w.frames <- string(b)
		}
	}()
	e.t.Cleanup(func() { conn.Close() })
	return w
}

// TestReplicaSidebarFollowsAnotherReplicasRun: two `parley serve`
// replicas; a session runs on A (real CLI); a sidebar and a board open on
// B see it go running → needs you → completed, by NOTIFY alone.
func TestReplicaSidebarFollowsAnotherReplicasRun(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "Result: " + fakeapi.ToolResultPlaceholder}}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	pid := strconv.FormatInt(e.project.ID, 10)
	sb := e.dialReplicaPath(b, e.user, "/projects/"+pid+"/sidebar/ws")
	sb.waitFor(30*time.Second, `id="sb-list"`, "sb-"+s.ID)
	bd := e.dialReplicaPath(b, e.user, "/board/ws")
	bd.waitFor(30*time.Second, `id="board-needs"`)

	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("make x")
	sb.waitFor(90*time.Second, `data-status="needs-you"`, "1 needs you")
	bd.waitFor(30*time.Second, `data-into="board-needs"`)
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	ins, err := e.st.PendingInputs(t.Context(), s.ID)
	if err != nil || len(ins) != 1 {
		t.Fatalf("pending inputs = %v, %v; want one", ins, err)
	}
	wa.answer(ins[0], map[string]any{"decision": "allow", "command": "touch x"})
	sb.waitFor(90*time.Second, `data-status="completed"`, "nothing needs you")
	bd.waitFor(30*time.Second, `data-into="board-recent"`)
}
