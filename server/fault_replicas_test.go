package server

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// newSessionOn creates a session with the prompt text through replica r
// and returns the response's status, its body and the new session's id
// ("" when none was made).
func (e *env) newSessionOn(r *replica, text string) (status int, body, id string) {
	e.t.Helper()
	form := url.Values{"text": {text}, csrfField: {e.user.CSRF}}
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, r.url+"/projects/"+pid(e)+"/sessions", strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.url)
	req.Header.Set("Cookie", sessionCookie+"="+e.user.Cookie)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), strings.TrimPrefix(res.Header.Get("Location"), "/sessions/")
}

// waitReply waits until the session's log holds text.
func (e *env) waitReply(sessionID, text string) {
	e.t.Helper()
	waitUntil(e.t, 90*time.Second, "session "+sessionID+" to show "+text, func() bool {
		evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
		if err != nil {
			return false
		}
		for _, ev := range evs {
			if strings.Contains(string(ev.Payload), text) {
				return true
			}
		}
		return false
	})
}

// startReplicasAtOnce starts n `parley serve` processes at the same moment
// on the env's database and data directory.
func (e *env) startReplicasAtOnce(n int) []*replica {
	e.t.Helper()
	rs := make([]*replica, n)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() { rs[i] = e.startReplica(fmt.Sprintf("R%d", i)) })
	}
	wg.Wait()
	for _, r := range rs {
		if r == nil {
			e.t.FailNow() // startReplica reported why
		}
	}
	return rs
}

// TestFaultReplicasStartTogether starts two, then three replicas at the
// same moment (issue 28, item 4): none may sweep another's live runtime
// directory, and a new session works on each of them.
func TestFaultReplicasStartTogether(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			var sc fakeapi.Scenario
			for i := range n {
				sc = append(sc, fakeapi.Step{Text: fmt.Sprintf("reply number %d", i)})
			}
			e := newEnv(t, sc, envOptions{quiet: true})
			rs := e.startReplicasAtOnce(n)
			for i, r := range rs {
				if _, err := os.Stat(filepath.Join(e.dataDir, "run", r.id)); err != nil {
					t.Errorf("%s's runtime directory: %v", r.name, err)
				}
				status, body, id := e.newSessionOn(r, fmt.Sprintf("task %d", i))
				if status != http.StatusSeeOther {
					t.Fatalf("new session on %s: %d %s", r.name, status, body)
				}
				e.waitReply(id, "reply number")
			}
		})
	}
}

// TestFaultRunDirRemoved removes a live replica's runtime directory (an
// operator's cleanup, or a sweep that erred): the next new session still
// starts its run, as does the one after.
func TestFaultRunDirRemoved(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "first reply"}, {Text: "second reply"}}, envOptions{quiet: true})
	if err := os.RemoveAll(e.runtimeDir()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first reply", "second reply"} {
		resp := e.postAs(e.user, "/projects/"+pid(e)+"/sessions", url.Values{"text": {"go"}})
		body := readAll(resp)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("new session with the runtime directory gone: %d %s", resp.StatusCode, body)
		}
		e.waitReply(strings.TrimPrefix(resp.Header.Get("Location"), "/sessions/"), want)
	}
}
