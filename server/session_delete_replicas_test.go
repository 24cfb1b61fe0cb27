package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/runner/fakeapi"
)

// An owner deletes, through replica B, a session whose run lives on
// replica A and waits on an ask: A's claude ends, the rows go, and a page
// open on A closes with "This session was deleted.".
func TestSessionDeleteAcrossReplicas(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch x"), {Text: "done"}}, envOptions{quiet: true})
	a, b := e.startReplica("A"), e.startReplica("B")
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("make x")
	wa.waitFor(90*time.Second, `class="item ask"`)
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	pid := e.pidOf(s.ID)
	page, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.url, "http")+"/sessions/"+s.ID+"/ws",
		http.Header{"Origin": {a.url}, "Cookie": {sessionCookie + "=" + owner.Cookie}})
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()

	form := url.Values{csrfField: {owner.CSRF}}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.url+"/sessions/"+s.ID+"/delete", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.url)
	req.Header.Set("Cookie", sessionCookie+"="+owner.Cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("delete through B: %d", resp.StatusCode)
	}
	waitUntil(t, 15*time.Second, "A's claude to end", func() bool { return syscall.Kill(pid, 0) != nil })
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("claude (pid %d) on A outlived the delete through B: %v", pid, err)
	}
	if code, reason := closeOf(t, page); code != closeRemoved || reason != reasonDeleted {
		t.Errorf("A's page closed with %d %q, want %d %q", code, reason, closeRemoved, reasonDeleted)
	}
	for table, c := range e.sessionRows(s.ID) {
		if c != 0 {
			t.Errorf("%d rows of %s still name the deleted session", c, table)
		}
	}
}
