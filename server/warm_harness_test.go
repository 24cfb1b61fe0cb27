package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"parley/warm"
)

// startWarm runs a pool of processes started ahead, as serve does, when
// cfg is set; it stops (killing them) before the supervisor shuts down.
func (e *env) startWarm(cfg *warm.Config, log *slog.Logger) {
	if cfg == nil {
		return
	}
	e.warm = warm.New(*cfg, e.sup, e.srv.launcher, log)
	e.srv.warm = e.warm
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.warm.Run(ctx) }()
	e.t.Cleanup(func() { stop(); <-done })
}

// testWarm is a pool that looks after itself often, for tests.
func testWarm() *warm.Config {
	return &warm.Config{PerProject: 1, Max: 2, Tick: 50 * time.Millisecond, Recheck: time.Hour, IdleAfter: time.Hour}
}

// warmPid waits until the project has a process ahead other than those
// of not, and returns its pid.
func (e *env) warmPid(projectID int64, not ...int) int {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range e.warm.Pids(projectID) {
			if !slices.Contains(not, pid) {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("no process was started ahead for project %d (besides %v)", projectID, not)
	return 0
}

// readyWarmPid opens the project's page and waits until a process ahead
// has finished its prime (runner.Warm.Ready): a message taken now goes
// to the CLI at once. It returns that process's pid.
func (e *env) readyWarmPid(projectID int64) int {
	e.t.Helper()
	e.get(fmt.Sprintf("/projects/%d", projectID))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if pids := e.warm.ReadyPids(projectID); len(pids) > 0 {
			return pids[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no process ahead of project %d finished its prime within a minute", projectID)
		}
	}
}

// createSession submits the new-session form of the project as the env's
// member with text as the first message, and returns the session's id.
func (e *env) createSessionForm(projectID int64, text string) string {
	e.t.Helper()
	res := e.postAs(e.user, fmt.Sprintf("/projects/%d/sessions", projectID), url.Values{"text": {text}})
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") {
		e.t.Fatalf("create session: %d %q", res.StatusCode, loc)
	}
	return strings.TrimPrefix(loc, "/sessions/")
}

// livePid waits for the session's live run and returns its pid.
func (e *env) livePid(sessionID string) int {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if r, ok := e.sup.Live(sessionID); ok {
			return r.Pid()
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("session %s has no live run", sessionID)
	return 0
}

// waitModelSaw waits until the fake model got a request whose last user
// text contains text, and returns it.
func (e *env) waitModelSaw(text string) (system, model string) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range e.fake.Requests() {
			for _, m := range r.Messages {
				for _, b := range m.Content {
					if m.Role == "user" && strings.Contains(b.Text, text) {
						return r.System, r.Model
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("the model never got %q", text)
	return "", ""
}

// pidGone waits until pid has exited (and was reaped).
func pidGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still runs after %s", pid, within)
}
