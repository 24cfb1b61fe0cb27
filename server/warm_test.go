package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/cluster"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/warm"
)

// Issue 33, item 1: warm starts. Every test runs the real CLI against the
// fake model and a real Postgres, with a pool of processes started ahead
// as serve runs it.

// TestWarmFirstMessageGoesToTheProcessStartedAhead: a project opened gets
// a process ahead, which shows nowhere (no session, no run, no model
// request); a new session's first message reaches the model from that very
// process, and the pool starts another.
func TestWarmFirstMessageGoesToTheProcessStartedAhead(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "warm reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID)) // the project is in use
	pid := e.warmPid(e.project.ID)
	time.Sleep(500 * time.Millisecond) // the CLI is up: nothing of it may show
	if list, err := e.st.ListSessions(t.Context(), e.project.ID); err != nil || len(list) != 0 {
		t.Fatalf("sessions before any was created: %d (%v)", len(list), err)
	}
	if n := e.sup.Count(); n != 0 {
		t.Fatalf("live runs before any session: %d", n)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the process started ahead asked the model %d times", n)
	}
	id := e.createSessionForm(e.project.ID, "first words")
	e.waitModelSaw("first words")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session's run is pid %d, want the process started ahead, %d", got, pid)
	}
	sess, err := e.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := e.fake.Requests(); reqs[len(reqs)-1].SessionID != sess.ClaudeSessionID {
		t.Fatalf("the model saw CLI session %q, the session row has %q", reqs[len(reqs)-1].SessionID, sess.ClaudeSessionID)
	}
	// The process was readied (initialize) and the CLI's answer, Parley's
	// bookkeeping, is not in the session's log.
	if n := count(e.eventTypes(id), "control_response"); n != 0 {
		t.Errorf("%d control_response events in the log, want none", n)
	}
	next := e.warmPid(e.project.ID, pid) // the pool refills
	t.Logf("adopted pid %d; the pool started %d", pid, next)
}

// TestWarmProcessUsedOnce: two sessions created at once with one process
// ahead get two different processes: at most one of them the process
// started ahead, the other started cold.
func TestWarmProcessUsedOnce(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true,
		warm: &warm.Config{PerProject: 1, Max: 1, Tick: 50 * time.Millisecond, Recheck: time.Hour, IdleAfter: time.Hour}})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	ids := make([]string, 2)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ids[i] = e.createSessionForm(e.project.ID, fmt.Sprintf("session %d speaks", i)) })
	}
	wg.Wait()
	e.waitModelSaw("session 0 speaks")
	e.waitModelSaw("session 1 speaks")
	a, b := e.livePid(ids[0]), e.livePid(ids[1])
	if a == b {
		t.Fatalf("both sessions run in process %d", a)
	}
	if a != pid && b != pid {
		t.Errorf("neither session took the process started ahead (%d): %d, %d", pid, a, b)
	}
}

// TestWarmSettingsChangedBeforeUse: the project's settings change after a
// process was started ahead, and nothing tells the pool (the change went
// straight to the database): the new session's start compares, does not
// use that process (it is killed), and starts cold with the new settings,
// which the model sees.
func TestWarmSettingsChangedBeforeUse(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	settings := e.project.ProjectSettings
	settings.AppendSystemPrompt, settings.Model = "Answer like a pirate, NEW-PROMPT-33.", "claude-warm-test-model"
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	id := e.createSessionForm(e.project.ID, "after the change")
	system, model := e.waitModelSaw("after the change")
	if !strings.Contains(system, "NEW-PROMPT-33") || model != "claude-warm-test-model" {
		t.Fatalf("the model saw the old settings: model %q, system prompt without the new text:\n%s", model, system)
	}
	if got := e.livePid(id); got == pid {
		t.Fatalf("the session runs in the process started with the old settings (%d)", pid)
	}
	pidGone(t, pid, 10*time.Second)
}

// TestWarmSettingsSavedDrainsThePool: a settings change announced to the
// pool (as the settings pages do) ends the process started with the old
// settings at once, not at its take, and one with the new settings takes
// its place.
func TestWarmSettingsSavedDrainsThePool(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	settings := e.project.ProjectSettings
	settings.AppendSystemPrompt = "SAVED-PROMPT-33"
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	e.warm.Recheck() // what handleSettingsSave calls
	pidGone(t, pid, 5*time.Second)
	fresh := e.warmPid(e.project.ID, pid)
	id := e.createSessionForm(e.project.ID, "with the saved prompt")
	if system, _ := e.waitModelSaw("with the saved prompt"); !strings.Contains(system, "SAVED-PROMPT-33") {
		t.Fatalf("the model saw the old system prompt:\n%s", system)
	}
	if got := e.livePid(id); got != fresh {
		t.Fatalf("the session runs in %d, want the process started with the new settings, %d", got, fresh)
	}
}

// TestWarmPoolStopsWhenTheLeaseIsLost: a replica whose lease lapses (its
// cluster node stops renewing it) ends its processes ahead and starts no
// more; Shutdown ends them too.
func TestWarmPoolStopsWhenTheLeaseIsLost(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	node := cluster.New(cluster.Config{TTL: 900 * time.Millisecond, DataDir: e.dataDir}, cluster.Deps{Store: e.st, Supervisor: e.sup,
		Publisher: e.pub, Log: slog.New(slog.DiscardHandler), Starter: func(string) runner.Starter { return nil }})
	e.sup.SetLeaseCheck(node.LeaseHeld)
	ctx, stopNode := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = node.Run(ctx) }()
	defer func() { stopNode(); <-done }()
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID) // the first heartbeat gave the lease
	stopNode()                     // no more heartbeats: the lease lapses
	<-done
	pidGone(t, pid, 5*time.Second)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		e.get(fmt.Sprintf("/projects/%d", e.project.ID)) // still in use
		if pids, n := e.warm.Pids(e.project.ID), e.sup.WarmCount(); len(pids) != 0 || n != 0 {
			t.Fatalf("a replica without its lease keeps processes ahead: %v (%d)", pids, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWarmEndsWithShutdown: Parley stopping ends every process ahead.
func TestWarmEndsWithShutdown(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	e.sup.Shutdown()
	pidGone(t, pid, 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	if n := e.sup.WarmCount(); n != 0 {
		t.Fatalf("%d processes started ahead after Shutdown", n)
	}
}

// TestWarmIdleProjectEmpties: a project nobody opens any more has its
// processes ahead ended.
func TestWarmIdleProjectEmpties(t *testing.T) {
	cfg := testWarm()
	cfg.IdleAfter = 700 * time.Millisecond
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, warm: cfg})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	pidGone(t, pid, 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	if pids := e.warm.Pids(e.project.ID); len(pids) != 0 {
		t.Fatalf("an idle project keeps processes ahead: %v", pids)
	}
}

// TestWarmGivesItsSlotToARun: with one slot, held by a process ahead of
// project A, a session of project B starts at once: the process ahead is
// killed for its slot, and none starts again while the run holds it.
func TestWarmGivesItsSlotToARun(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, perTurn: true, maxRuns: 1, warm: testWarm()})
	b, err := e.st.CreateProject(t.Context(), "Project B", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetMember(t.Context(), b.ID, e.user.ID, roleMember); err != nil {
		t.Fatal(err)
	}
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	id := e.createSessionForm(b.ID, "project B needs the slot")
	e.waitModelSaw("project B needs the slot")
	if got := e.livePid(id); got == pid {
		t.Fatalf("project B's session runs in project A's process ahead (%d)", pid)
	}
	pidGone(t, pid, 10*time.Second)
	time.Sleep(500 * time.Millisecond)
	if n := e.sup.WarmCount(); n != 0 || e.sup.LiveRuns() != 1 {
		t.Fatalf("with the one slot taken by a run: %d processes ahead, %d slots used", n, e.sup.LiveRuns())
	}
}

// TestWarmSessionAsks: the CLI started ahead connects to Parley's ask
// server as it starts, before any session has it; once a session took it,
// the model's ask_user reaches that session's page and the answer the
// model.
func TestWarmSessionAsks(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "You said " + fakeapi.ToolResultPlaceholder},
	}, envOptions{quiet: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	time.Sleep(2 * time.Second) // the CLI has started and connected its MCP servers
	id := e.createSessionForm(e.project.ID, "ask me")
	w := e.dial(id, 0)
	in := e.waitInput(w, id)
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session runs in %d, want the process started ahead, %d", got, pid)
	}
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(60*time.Second, "You said", "Blue")
}
