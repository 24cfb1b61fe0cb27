package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// waitOwner waits until the session's lease is held by want, with a run of
// want's open; it returns how long that took.
func (e *env) waitOwner(sessionID, want string, within time.Duration) time.Duration {
	e.t.Helper()
	start := time.Now()
	for {
		var open int
		e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL AND replica_id = $2`,
			[]any{sessionID, want}, &open)
		if e.owner(sessionID) == want && open == 1 {
			return time.Since(start)
		}
		if time.Since(start) > within {
			e.t.Fatalf("after %s the owner is %q with %d open runs there, want %s with one", within, e.owner(sessionID), open, want)
		}
		time.Sleep(50 * time.Millisecond) // a test's own deadline loop on the database
	}
}

// TestFaultReplicaSigtermHandsOver: SIGTERM to the replica whose run waits
// on an open ask hands the session over: another replica owns it and runs
// its process (--resume) within seconds, with nobody doing anything, and
// the answer given in that replica's page reaches the model once.
func TestFaultReplicaSigtermHandsOver(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch h"), {Text: "Answered after the handover."}},
		envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=30")
	b := e.startReplica("B")
	s := e.newSession()
	wa, wb := e.dialReplica(a, e.user, s.ID), e.dialReplica(b, e.user, s.ID)
	wa.prompt("make h")
	in := e.waitInput(wa, s.ID)
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })

	began := time.Now()
	a.stop(syscall.SIGTERM)
	exited := time.Since(began)
	took := e.waitOwner(s.ID, b.id, 20*time.Second)
	t.Logf("A exited %s after SIGTERM (its only turn waited on an ask: no grace wait); B owned the session and ran its process %s later",
		exited.Round(time.Millisecond), took.Round(time.Millisecond))
	if exited > 15*time.Second {
		t.Errorf("A took %s to exit: a turn blocked on an ask should not wait for the grace period", exited)
	}
	var all, resumed int
	e.queryRow(`SELECT count(*), count(*) FILTER (WHERE type = 'run_started' AND (payload->>'resume')::bool) FROM events
		WHERE session_id = $1`, []any{s.ID}, &all, &resumed)
	if resumed != 1 {
		t.Errorf("%d resumed run_started events, want B's one", resumed)
	}

	wb.answer(in, map[string]any{"decision": "allow", "command": "touch h"})
	wb.waitFor(90*time.Second, "Answered after the handover.")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2 (the prompt, then the answer once)", len(reqs))
	}
	if got := reqs[1].LastUserText(); !strings.Contains(got, "touch h") || !strings.Contains(got, "[Parley]") {
		t.Errorf("the turn after the handover is %q, want the answer allowing touch h", got)
	}
	if got, err := e.st.GetInput(t.Context(), in.ID); err != nil || got.Status != "answered" {
		t.Errorf("input = %+v, %v; want answered", got, err)
	}
	if all, open := e.runsOf(s.ID); all != 2 || open != 1 {
		t.Errorf("%d runs, %d open; want A's ended and B's live", all, open)
	}
	e.wantContiguousLog(s.ID)
}

// TestFaultReplicaSigtermFinishesTurn: a run streaming on A when A gets
// SIGTERM finishes its turn before A exits, every event of it in the log;
// the next prompt, through B, continues the conversation there.
func TestFaultReplicaSigtermFinishesTurn(t *testing.T) {
	long := strings.Repeat("streamed words ", 60) + "THE END."
	e := newEnv(t, fakeapi.Scenario{{Text: long, Chunks: 60, ChunkDelay: 50 * time.Millisecond},
		{Text: "Second turn on B."}}, envOptions{quiet: true})
	// A's claude writes a copy of its stdout, to compare with the log.
	dir := t.TempDir()
	stdout := filepath.Join(dir, "stdout")
	wrapper := filepath.Join(dir, "claude")
	script := "#!/bin/sh\n\"" + fakeapi.ClaudeBin(t) + "\" \"$@\" | tee -a " + stdout + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=60", "PARLEY_CLAUDE_BIN="+wrapper)
	b := e.startReplica("B")
	s := e.newSession()
	wa, wb := e.dialReplica(a, e.user, s.ID), e.dialReplica(b, e.user, s.ID)
	wa.prompt("stream something long")
	wa.waitFor(90*time.Second, "streamed words")
	a.stop(syscall.SIGTERM)

	var results, ended int
	var stopped string
	e.queryRow(`SELECT count(*) FILTER (WHERE type = 'result' AND NOT coalesce((payload->>'is_error')::bool, false)),
		count(*) FILTER (WHERE type = 'run_ended'), coalesce(max(payload->>'reason') FILTER (WHERE type = 'run_ended'), '')
		FROM events WHERE session_id = $1`, []any{s.ID}, &results, &ended, &stopped)
	if results != 1 || ended != 1 {
		t.Fatalf("after A exited the log has %d successful results and %d run ends, want the turn's result and A's end", results, ended)
	}
	var text string
	e.queryRow(`SELECT payload::text FROM events WHERE session_id = $1 AND type = 'assistant' ORDER BY seq DESC LIMIT 1`,
		[]any{s.ID}, &text)
	if !strings.Contains(text, "THE END.") {
		t.Errorf("the log's last assistant message is %.200q…, want the whole reply", text)
	}
	// Every line the CLI printed for the turn is in the log.
	out, err := os.ReadFile(stdout)
	if err != nil {
		t.Fatal(err)
	}
	var printed, logged int
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, `"type":"stream_event"`) {
			printed++
		}
	}
	e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND type = 'stream_event'`, []any{s.ID}, &logged)
	if printed == 0 || logged != printed {
		t.Errorf("the CLI printed %d stream events on A, the log holds %d", printed, logged)
	}
	t.Logf("A's turn: %d stream events printed by the CLI, %d in the log", printed, logged)
	wb.waitFor(30*time.Second, "THE END.")
	if got := e.owner(s.ID); got != "" {
		t.Errorf("owner after the drain %q, want none: the session was idle", got)
	}

	wb.prompt("and now through B")
	wb.waitFor(90*time.Second, "Second turn on B.")
	if got := e.owner(s.ID); got != b.id {
		t.Errorf("owner %q, want B (%s)", got, b.id)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2: the first turn ran once", n)
	}
	e.wantContiguousLog(s.ID)
}

// TestFaultReplicaSigtermMovesQueuedPrompt: on A (one claude slot) a
// session's run waits on an ask while a second session's prompt waits in
// line for the slot; SIGTERM to A hands both over: B runs the second
// session and the queued prompt reaches the model there, once.
func TestFaultReplicaSigtermMovesQueuedPrompt(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch k"), {Text: "The queued prompt, answered on B."}},
		envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=30", "PARLEY_MAX_RUNS=1")
	b := e.startReplica("B")
	s1, s2 := e.newSession(), e.newSession()
	wa1 := e.dialReplica(a, e.user, s1.ID)
	wa1.prompt("make k")
	e.waitInput(wa1, s1.ID)
	wa2 := e.dialReplica(a, e.user, s2.ID)
	wa2.prompt("queued behind the slot")
	wa2.waitFor(60*time.Second, "Waiting for a free slot")
	if got := e.owner(s2.ID); got != a.id {
		t.Fatalf("owner of the queued session %q, want A (%s)", got, a.id)
	}
	if all, _ := e.runsOf(s2.ID); all != 0 {
		t.Fatalf("the queued session has %d runs, want none: A's only slot is taken", all)
	}
	wb2 := e.dialReplica(b, e.user, s2.ID)
	a.stop(syscall.SIGTERM)
	wb2.waitFor(90*time.Second, "The queued prompt, answered on B.")
	if got := e.owner(s2.ID); got != b.id {
		t.Errorf("owner of the queued session %q, want B (%s)", got, b.id)
	}
	e.waitOwner(s1.ID, b.id, 20*time.Second) // the asking session went to B too
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if got := reqs[1].LastUserText(); got != "queued behind the slot" {
		t.Errorf("the second request ends with %q, want the queued prompt", got)
	}
	e.wantContiguousLog(s2.ID)
}

// TestFaultReplicaSigtermMovesQueuedAnswer: on A (one claude slot) a
// session's ask outlives its process (killed); a second session's run
// takes the slot and waits on an ask of its own; the first ask's answer,
// given in A's page, waits in line for the slot. SIGTERM to A hands both
// sessions over: the queued answer resolves the ask on B and reaches the
// model there once, as the next message.
func TestFaultReplicaSigtermMovesQueuedAnswer(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		bashStep("touch q"),
		{Text: "The queued answer, read on B."},
	}, envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=30", "PARLEY_MAX_RUNS=1")
	b := e.startReplica("B")
	s1, s2 := e.newSession(), e.newSession()

	// s2 asks, and its process dies with the ask open.
	wa2 := e.dialReplica(a, e.user, s2.ID)
	wa2.prompt("pick a colour")
	in := e.waitInput(wa2, s2.ID)
	e.waitTranscript(s2, e.fake.Requests()[0].ToolUseID) // what --resume on B reads
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s2.ID}, &pid)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wa2.waitFor(60*time.Second, "process has ended since it asked")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, open := e.runsOf(s2.ID); open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed run of s2 did not end")
		}
	}

	// s1 takes A's only slot and waits on an ask; s2's answer waits in line.
	wa1 := e.dialReplica(a, e.user, s1.ID)
	wa1.prompt("make q")
	e.waitInput(wa1, s1.ID)
	wa2.answer(in, map[string]any{"choice": "Blue"})
	wa2.waitFor(60*time.Second, "Waiting for a free slot")
	if got, err := e.st.GetInput(t.Context(), in.ID); err != nil || got.Status != "pending" {
		t.Fatalf("the queued answer's ask = %+v, %v; want pending: the answer must not have run on A", got, err)
	}
	if all, open := e.runsOf(s2.ID); all != 1 || open != 0 {
		t.Fatalf("s2 has %d runs, %d open; want its killed one only: A's only slot is taken", all, open)
	}

	wb2 := e.dialReplica(b, e.user, s2.ID)
	a.stop(syscall.SIGTERM)
	wb2.waitFor(90*time.Second, "The queued answer, read on B.")
	if got := e.owner(s2.ID); got != b.id {
		t.Errorf("owner of the answered session %q, want B (%s)", got, b.id)
	}
	e.waitOwner(s1.ID, b.id, 20*time.Second) // the asking session went to B too
	reqs := e.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3: two prompts, then the answer once", len(reqs))
	}
	if got := userMentions(reqs[2], "Blue"); got != 1 {
		t.Errorf("the model was told the answer %d times in the turn after the handover, want once:\n%s", got, reqs[2].LastUserText())
	}
	if got, err := e.st.GetInput(t.Context(), in.ID); err != nil || got.Status != "answered" {
		t.Errorf("input = %+v, %v; want answered", got, err)
	}
	e.wantDelivered(s2.ID, in.ID, runner.DeliveredNewTurn)
	var bRuns int
	e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND replica_id = $2`, []any{s2.ID, b.id}, &bRuns)
	if all, _ := e.runsOf(s2.ID); all != 2 || bRuns != 1 {
		t.Errorf("s2 has %d runs, %d of them on B; want the killed one on A and one on B", all, bRuns)
	}
	e.wantContiguousLog(s2.ID)
	e.wantContiguousLog(s1.ID)
}

// TestFaultReplicaReadyzWhileDraining: /readyz answers 503 as soon as a
// replica starts to drain, while a turn in flight still keeps it running.
func TestFaultReplicaReadyzWhileDraining(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, fakeapi.Scenario{{Text: "held…", Hold: hold}}, envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=60")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	if got := status(t, a.url+"/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz = %d before the drain, want 200", got)
	}
	wa.prompt("hold on")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for status(t, a.url+"/readyz") != http.StatusServiceUnavailable {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still answers 200 20 s after SIGTERM")
		}
		time.Sleep(50 * time.Millisecond) // a test's own deadline loop
	}
	select {
	case <-a.ended:
		t.Fatal("A exited with a turn in flight")
	default:
	}
	close(hold)
	select {
	case <-a.ended:
	case <-time.After(60 * time.Second):
		t.Fatal("A did not exit after its turn ended")
	}
	var results int
	e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND type = 'result'`, []any{s.ID}, &results)
	if results != 1 {
		t.Errorf("%d results in the log, want the held turn's", results)
	}
}

// status GETs url and returns the status code (0 when it cannot connect).
func status(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
