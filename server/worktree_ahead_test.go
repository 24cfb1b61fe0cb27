package server

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
	"parley/store"
)

// A merge or discard and a start ahead of any message (server/ahead.go).

// editedAheadSession is a session of a git project whose first turn wrote
// b.txt in its worktree of repo and whose process has ended since, as after the
// idle stop; its page, opened next, resumes it ahead.
func (e *env) editedAheadSession(repo string) store.Session {
	e.t.Helper()
	e.useRepo(repo)
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("edit the files")
	w.waitFor(2*time.Minute, "Done editing.")
	e.waitTurnOver(s.ID)
	w.conn.Close()
	e.endRun(s.ID)
	sess, err := e.st.GetSession(e.t.Context(), s.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return sess
}

// worktreeAct posts the session page's merge or discard form, as its
// button does, and returns the status and where it sends the page.
func (e *env) worktreeAct(sessionID, action string) (int, string) {
	e.t.Helper()
	resp := e.postAs(e.user, "/sessions/"+sessionID+"/worktree/"+action, url.Values{})
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// A member opens a session's page, which resumes it ahead, and clicks
// Merge (or Discard) while that process still primes. Nobody waits on a
// start ahead: the merge ends it, as it ends an idle process, and goes on.
// Before the start ahead gave way (runner.Deps.StartYield) the merge
// waited for the prime, then was refused with 409 "Claude is working in
// this session... try again". The process started ahead ends, git does
// its work, and a message afterwards runs.
func TestWorktreeMergeEndsAPrimingResumeAhead(t *testing.T) {
	for _, tc := range []struct{ action, done string }{{"merge", "merged"}, {"discard", "discarded"}} {
		t.Run(tc.action, func(t *testing.T) {
			bin, slow := slowClaude(t, 4*time.Second)
			e := newEnv(t, fakeapi.Scenario{
				{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
				{Text: "Done editing."},
				{Text: "After the " + tc.action + "."},
			}, envOptions{quiet: true, claudeBin: bin})
			repo := gitRepo(t)
			s := e.editedAheadSession(repo)
			if err := os.WriteFile(slow, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			w := e.dial(s.ID, 0) // the page opens: the session resumes ahead; its prime waits for the slow CLI
			for deadline := time.Now().Add(15 * time.Second); len(pidsWith(s.ClaudeSessionID)) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("opening the page started no process ahead")
				}
			}
			pids := pidsWith(s.ClaudeSessionID)

			began := time.Now()
			code, location := e.worktreeAct(s.ID, tc.action)
			if code != http.StatusSeeOther || !strings.Contains(location, "worktree="+tc.done) {
				t.Fatalf("%s while a resume ahead primes: %d %q after %s; want 303 to worktree=%s",
					tc.action, code, location, time.Since(began).Round(time.Millisecond), tc.done)
			}
			t.Logf("the %s took %s", tc.action, time.Since(began).Round(time.Millisecond))
			if left := pidsWith(s.ClaudeSessionID); len(left) > 0 {
				t.Errorf("processes %v of the session run after the %s (the start ahead was %v)", left, tc.action, pids)
			}
			var open int
			e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &open)
			if open != 0 {
				t.Errorf("%d runs of the session open after the %s", open, tc.action)
			}
			wt, err := e.st.SessionWorktree(t.Context(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.action {
			case "merge":
				if got, _ := os.ReadFile(filepath.Join(repo, "b.txt")); string(got) != "hello\n" || wt.State != store.WorktreeMerged {
					t.Errorf("after the merge: b.txt in the checkout = %q, worktree %q", got, wt.State)
				}
			case "discard":
				if wt.State != store.WorktreeDiscarded {
					t.Errorf("after the discard: worktree %q", wt.State)
				}
			}

			// A message afterwards starts the session again and runs.
			if err := os.Remove(slow); err != nil {
				t.Fatal(err)
			}
			w.prompt("go on")
			w.waitFor(2*time.Minute, "After the "+tc.action+".")
		})
	}
}

// A merge while a message's own run is starting (git prepares its
// worktree) is still refused: that run has a turn to take, and the merge
// must not end it. It waits for the start, then says try again (409).
func TestWorktreeMergeRefusedWhileAMessageStarts(t *testing.T) {
	git, held := heldGit(t, "symbolic-ref")
	release := filepath.Join(held, "go")
	if err := os.WriteFile(release, nil, 0o644); err != nil { // git runs freely until the message
		t.Fatal(err)
	}
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
		{Text: "The message turn ran."},
	}, envOptions{quiet: true, gitBin: git})
	s := e.editedAheadSession(gitRepo(t))
	w := e.dial(s.ID, 0)
	e.waitAheadLive(s.ID)
	e.endRun(s.ID) // the page asks for no other start ahead for aheadEvery: the next start is the message's

	for _, f := range []string{release, filepath.Join(held, "held")} { // the starts before marked held too
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	w.prompt("go on")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(held, "held")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message's start ran no git")
		}
	}
	type result struct {
		code     int
		location string
	}
	merged := make(chan result, 1)
	go func() {
		code, location := e.worktreeAct(s.ID, "merge")
		merged <- result{code, location}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if wanted, err := e.st.WorktreeWanted(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		} else if wanted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the merge did not wait for the worktree lock")
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-merged:
		if r.code != http.StatusConflict {
			t.Fatalf("merge while a message's run starts: %d %q; want 409", r.code, r.location)
		}
	case <-time.After(time.Minute):
		t.Fatal("the merge did not end")
	}
	w.waitFor(2*time.Minute, "The message turn ran.")
	wt, err := e.st.SessionWorktree(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if wt.State != store.WorktreeActive {
		t.Errorf("worktree %q after a refused merge, want active", wt.State)
	}
}

// A message sent while the page's start ahead primes waits for that start;
// a merge clicked then does not wait for the prime: the start ahead gives
// way, the merge is done, and the message, kept, starts the session after
// it and reaches the model once.
func TestWorktreeMergeWhileAMessageWaitsOnAStartAhead(t *testing.T) {
	bin, slow := slowClaude(t, 4*time.Second)
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
		{Text: "The kept message ran."},
	}, envOptions{quiet: true, claudeBin: bin})
	repo := gitRepo(t)
	s := e.editedAheadSession(repo)
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0)
	for deadline := time.Now().Add(15 * time.Second); len(pidsWith(s.ClaudeSessionID)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
	}
	w.prompt("go on")
	time.Sleep(300 * time.Millisecond) // the message waits for the start ahead
	began := time.Now()
	code, location := e.worktreeAct(s.ID, "merge")
	took := time.Since(began)
	if code != http.StatusSeeOther || !strings.Contains(location, "worktree=merged") {
		t.Fatalf("merge while a message waits on a priming start ahead: %d %q after %s; want 303 to worktree=merged", code, location, took.Round(time.Millisecond))
	}
	t.Logf("the merge took %s", took.Round(time.Millisecond))
	if got, _ := os.ReadFile(filepath.Join(repo, "b.txt")); string(got) != "hello\n" {
		t.Errorf("b.txt in the checkout after the merge = %q", got)
	}
	done := time.Now()
	w.waitFor(2*time.Minute, "The kept message ran.")
	var started time.Time
	e.queryRow(`SELECT max(started_at) FROM runs WHERE session_id = $1`, []any{s.ID}, &started)
	if started.Before(done.Add(-time.Second)) {
		t.Errorf("the message's run started at %s, before the merge ended at %s", started.Format(time.StampMicro), done.Format(time.StampMicro))
	}
	var sent int
	for _, r := range e.fake.Requests() {
		if r.LastUserText() == "go on" {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("the message reached the model %d times, want 1", sent)
	}
}

// Across replicas: the page on A resumes the session ahead there, and a
// member merges through B while A's start primes. The start on A sees the
// merge waiting for the lock (Postgres, not a signal between replicas),
// gives way, and B's merge is done; a message through A afterwards runs.
func TestReplicasWorktreeMergeEndsAPrimingResumeAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
		{Text: "After the merge."},
	}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	bin, slow := slowClaude(t, 4*time.Second)
	claude := "PARLEY_CLAUDE_BIN=" + bin(fakeapi.ClaudeBin(t)) // the last value of a key is the one a process gets
	a, b := e.startReplica("A", claude), e.startReplica("B", claude)
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("edit the files")
	wa.waitFor(90*time.Second, "Done editing.")
	e.waitTurnOver(s.ID)
	wa.conn.Close()
	// Archived and back: its process ends on A, as after the idle stop.
	e.postTo(a, e.user, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}})
	e.postTo(a, e.user, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"0"}})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, open := e.runsOf(s.ID); open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the archive did not end the session's process")
		}
	}
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(slow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wa = e.dialReplica(a, e.user, s.ID) // resumed ahead on A; its prime waits for the slow CLI
	for deadline := time.Now().Add(20 * time.Second); len(pidsWith(sess.ClaudeSessionID)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("opening the page on A started no process ahead")
		}
	}
	began := time.Now()
	e.postTo(b, e.user, "/sessions/"+s.ID+"/worktree/merge", url.Values{}) // fails the test unless 303
	t.Logf("the merge through B took %s", time.Since(began).Round(time.Millisecond))
	if _, open := e.runsOf(s.ID); open != 0 {
		t.Errorf("after the merge through B, %d runs of the session are open", open)
	}
	if left := pidsWith(sess.ClaudeSessionID); len(left) > 0 {
		t.Errorf("processes %v of the session run after the merge", left)
	}
	if got := runGit(t, repo, "show", "main:b.txt"); got != "hello" {
		t.Errorf("main's b.txt = %q after the merge, want the session's work", got)
	}
	if err := os.Remove(slow); err != nil {
		t.Fatal(err)
	}
	wa.prompt("go on")
	wa.waitFor(2*time.Minute, "After the merge.")
}
