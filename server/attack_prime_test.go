package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/streamjson"
	"parley/warm"
)

// Attacks on the prime turns of runner/prime.go (a process started ahead
// is given a turn the gateway answers itself, then rewinds it away): the
// model never sees a prime, nobody pays for one, and a prime that fails
// leaves nothing behind.

// slowClaude wraps the CLI so that, while the returned flag file exists,
// it sleeps first: a prime then waits for a CLI that has not started yet,
// as under a full machine.
func slowClaude(t *testing.T, delay time.Duration) (bin func(string) string, flag string) {
	dir := t.TempDir()
	flag = filepath.Join(dir, "slow")
	return func(real string) string {
		path := filepath.Join(dir, "claude")
		script := fmt.Sprintf("#!/bin/sh\nif [ -e %s ]; then sleep %.1f; fi\nexec %s \"$@\"\n", flag, delay.Seconds(), real)
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}, flag
}

// pidsWith are the processes whose command line holds s.
func pidsWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && !bytes.Contains(st, []byte(") Z")) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// modelSawPrime is the first request the model got that holds a prime.
func (e *env) modelSawPrime() string {
	for _, r := range e.fake.Requests() {
		if strings.Contains(string(r.Raw), streamjson.PrimeText) {
			return string(r.Raw)
		}
	}
	return ""
}

// A warm process whose prime times out (a CLI slower than the bound to
// start) stopped being primed at the timeout while it still ran: the
// prime turn it had been written then went to the model, charged to the
// project. A prime that fails must end its process before the gateway
// stops answering for it.
func TestAttackPrimeTimeoutNeverReachesModel(t *testing.T) {
	bin, flag := slowClaude(t, 2*time.Second)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wc := &warm.Config{PerProject: 1, Max: 1, Tick: time.Hour, Recheck: time.Hour, IdleAfter: time.Hour}
	e := newEnv(t, fakeapi.Scenario{{Text: "reply"}}, envOptions{quiet: true, warm: wc, claudeBin: bin,
		runConfig: func(c *runner.Config) { c.PrimeTimeout = 300 * time.Millisecond }})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	time.Sleep(6 * time.Second) // the CLI starts at 2 s and reads the prime it was written
	if raw := e.modelSawPrime(); raw != "" {
		t.Fatalf("a prime that timed out reached the model (warm pid %d):\n%.600s", pid, raw)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests with no message sent", n)
	}
}

// resultOf is the payload of the session's first result event.
func (e *env) resultOf(sessionID string) map[string]any {
	e.t.Helper()
	evs, err := e.st.EventsAfter(e.t.Context(), sessionID, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == "result" {
			var m map[string]any
			if err := json.Unmarshal(ev.Payload, &m); err != nil {
				e.t.Fatal(err)
			}
			return m
		}
	}
	e.t.Fatalf("session %s has no result", sessionID)
	return nil
}

// What a session's first turn shows people (its result's cost, usage,
// turns; the gateway's usage rows; its page and exports) is the same
// whether its process was primed or started cold: nothing of the prime
// is counted or shown.
func TestAttackPrimeCostsNothingShown(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "a reply", InputTokens: 1000}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	pid := e.readyWarmPid(e.project.ID)
	warmID := e.createSessionForm(e.project.ID, "first words")
	if got := e.livePid(warmID); got != pid {
		t.Fatalf("the session runs in %d, not in the primed process %d", got, pid)
	}
	e.waitTurnOver(warmID)
	cold := e.newSession() // not through the form: a cold start
	w := e.dial(cold.ID, 0)
	w.prompt("first words")
	w.waitFor(60*time.Second, "turn-result")
	e.waitTurnOver(cold.ID)
	a, b := e.resultOf(warmID), e.resultOf(cold.ID)
	for _, k := range []string{"total_cost_usd", "num_turns", "usage"} {
		ja, _ := json.Marshal(a[k])
		jb, _ := json.Marshal(b[k])
		if k == "usage" {
			ja, jb = []byte(fmt.Sprint(a[k].(map[string]any)["input_tokens"], a[k].(map[string]any)["output_tokens"])),
				[]byte(fmt.Sprint(b[k].(map[string]any)["input_tokens"], b[k].(map[string]any)["output_tokens"]))
		}
		if string(ja) != string(jb) {
			t.Errorf("%s of the primed session's first turn = %s, of the cold one's = %s", k, ja, jb)
		}
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests for two messages", n)
	}
	if n := e.chargedRequests(2); n != 2 {
		t.Errorf("the gateway charged %d requests for two messages", n)
	}
	ws, err := e.st.GetSession(t.Context(), warmID)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := e.st.GetSession(t.Context(), cold.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/sessions/" + warmID, "/sessions/" + warmID + "/export.md", "/sessions/" + warmID + "/export.json"} {
		resp, body := e.get(path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "first words") {
			t.Fatalf("GET %s = %d:\n%.500s", path, resp.StatusCode, body)
		}
		if strings.Contains(body, "Parley readies") || strings.Contains(body, streamjson.PrimeMessagePrefix) {
			t.Errorf("GET %s shows the prime", path)
		}
	}
	if ws.TotalCostUSD != cs.TotalCostUSD || ws.NumTurns != cs.NumTurns {
		t.Errorf("the primed session shows $%v in %d turns, the cold one $%v in %d", ws.TotalCostUSD, ws.NumTurns, cs.TotalCostUSD, cs.NumTurns)
	}
}

// A run whose process was primed gets no free answers afterwards: its own
// requests to the gateway with its token (curl from Bash) go to the
// model and are charged, never answered by the gateway as a prime's.
func TestAttackPrimedRunGetsNoFreeAnswers(t *testing.T) {
	sc := fakeapi.Scenario{
		{Text: "First reply."},
		{ToolName: "Bash", ToolInput: map[string]any{"command": curlGateway("claude-sonnet-4-5")}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	s := e.aheadSession()
	before := e.chargedRequests(0)
	w := e.dial(s.ID, 0) // resumed ahead and primed
	defer w.conn.Close()
	if !e.waitLive(s.ID, true, 30*time.Second) {
		t.Fatal("opening the session did not resume it ahead")
	}
	time.Sleep(2 * time.Second) // its prime is done
	w.prompt("curl the gateway")
	w.waitFor(90*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(3) // "first", the message's, its tool result's
	if strings.Contains(out, streamjson.PrimeMessagePrefix) || !strings.Contains(out, "HTTP200") {
		t.Fatalf("the run's own request after its prime was answered:\n%s", out)
	}
	if side := sideRequestsOf(e, "gateway attack"); len(side) != 1 {
		t.Fatalf("%d of the run's own requests reached the model, want 1", len(side))
	}
	if got := e.chargedRequests(before+3) - before; got != 3 { // the CLI's two and the curl
		t.Errorf("the gateway charged %d requests for the message's turn, want 3", got)
	}
}

// chargedRequests is the number of requests the gateway charged to the
// project today, once it reaches want (at most 10 s) and holds for a
// moment more: a request is charged when its response's body is closed,
// just after the CLI has it, so a turn's result can show before its last
// request is charged (CI, once: "charged 2 requests, want 3").
func (e *env) chargedRequests(want int64) int64 {
	e.t.Helper()
	read := func() int64 {
		u, err := e.st.ProjectUsage(e.t.Context(), e.project.ID, 1)
		if err != nil {
			e.t.Fatal(err)
		}
		return u.Requests
	}
	for deadline := time.Now().Add(10 * time.Second); read() < want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a request charged twice would show now
	return read()
}
