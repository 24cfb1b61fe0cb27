package server

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// heldGit writes a git for the server that, on a command with the argument
// word (`git merge`: "merge"), marks dir/held and waits until dir/go exists
// before it runs it: a merge, say, caught in the middle.
func heldGit(t *testing.T, word string) (bin, dir string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // git may run as the project's uid
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "git")
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
	if [ "$a" = %[3]s ]; then
		: > %[1]s/held
		i=0
		while [ ! -e %[1]s/go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
		break
	fi
done
exec %[2]s "$@"
`, dir, real, word)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// waitTurnOver waits until the session's turn has ended in the log: the
// page shows the reply's text before the result that ends the turn, and a
// merge is refused (409) while Claude works.
func (e *env) waitTurnOver(sessionID string) {
	e.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		if got, _ := e.st.GetSession(e.t.Context(), sessionID); got.Status != "running" && got.Status != "waiting" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the turn did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A message sent while a member merges the session's worktree does not
// start Claude in the worktree until the merge is done: git commits and
// merges what the stopped process left, and the message's turn runs after,
// on the merged branch. Without the worktree lock the message's run
// started in the middle of the merge. The message waits in the session's
// saved line, not in its sender's socket: the page can do other things,
// and closing it loses nothing.
func TestWorktreeMergeHoldsNewRuns(t *testing.T) {
	git, held := heldGit(t, "merge")
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
		{Text: "Second turn, after the merge."},
	}, envOptions{quiet: true, gitBin: git})
	repo := gitRepo(t)
	e.useRepo(repo)
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("edit the files")
	w.waitFor(2*time.Minute, "Done editing.")
	e.waitTurnOver(s.ID)

	// The merge, sent as a page's form is, waits in git merge.
	type result struct {
		code     int
		location string
		err      error
	}
	merged := make(chan result, 1)
	go func() {
		form := url.Values{csrfField: {e.user.CSRF}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.web.URL+"/sessions/"+s.ID+"/worktree/merge", strings.NewReader(form.Encode()))
		req.Header = e.header(e.user)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			merged <- result{err: err}
			return
		}
		resp.Body.Close()
		merged <- result{code: resp.StatusCode, location: resp.Header.Get("Location")}
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(filepath.Join(held, "held")); err == nil {
			break
		}
		select {
		case r := <-merged:
			t.Fatalf("the merge ended before git merge ran: %+v", r)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("git merge did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var open int
	e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &open)
	if open != 0 {
		t.Fatalf("%d runs of the session open while git merges; the merge stops its process first", open)
	}

	// A member sends a message in the middle of the merge. It is kept in
	// the line at once, and the page's socket is free for what the member
	// does next (here Stop: nothing runs).
	w.prompt("go on")
	w.send(map[string]any{"action": "stop"})
	w.waitFor(15*time.Second, "Claude is not running in this session.")
	var kept int
	e.queryRow(`SELECT count(*) FROM session_line WHERE session_id = $1 AND kind = 'prompt' AND text = 'go on'`, []any{s.ID}, &kept)
	if kept != 1 {
		t.Fatalf("%d kept prompts \"go on\" during the merge, want 1", kept)
	}
	// The page closes; the message is not lost with it.
	w.conn.Close()
	time.Sleep(2 * time.Second)
	var runs int
	e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1`, []any{s.ID}, &runs)
	if n := len(e.fake.Requests()); runs != 1 || n != 2 {
		t.Fatalf("during the merge: %d runs of the session, %d model requests; want 1 and 2 (no run starts in a worktree being merged)", runs, n)
	}

	released := time.Now()
	if err := os.WriteFile(filepath.Join(held, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-merged:
		if r.err != nil || r.code != http.StatusSeeOther || !strings.Contains(r.location, "worktree=merged") {
			t.Fatalf("merge: %+v", r)
		}
	case <-time.After(time.Minute):
		t.Fatal("the merge did not end")
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "b.txt")); string(got) != "hello\n" {
		t.Errorf("b.txt in the checkout after the merge = %q", got)
	}

	// The message was kept and its turn runs now, after the merge.
	w = e.dial(s.ID, 0)
	w.waitFor(2*time.Minute, "Second turn, after the merge.")
	var started time.Time
	e.queryRow(`SELECT max(started_at) FROM runs WHERE session_id = $1`, []any{s.ID}, &started)
	if started.Before(released) {
		t.Errorf("the message's run started at %s, before the merge was let go at %s", started.Format(time.StampMicro), released.Format(time.StampMicro))
	}
	if n := len(e.fake.Requests()); n != 3 {
		t.Errorf("%d model requests; want 3 (the message reached the model once)", n)
	}
}
