package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
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

// Parley stopped (Supervisor.Shutdown) while a resume ahead primes: the
// start went on after Shutdown returned, recorded a run of a replica that
// had stopped, and its process outlived Shutdown by the whole prime.
func TestAttackShutdownDuringPrime(t *testing.T) {
	bin, flag := slowClaude(t, 3*time.Second)
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, claudeBin: bin})
	s := e.aheadSession()
	fresh, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.EventsAfter(t.Context(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1].Seq
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // the page opens: its process is resumed ahead and primed
	defer w.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsWith(fresh.ClaudeSessionID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the prime waits for the slow CLI
	e.sup.Shutdown()
	time.Sleep(200 * time.Millisecond)
	if pids := pidsWith(fresh.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the session outlived Shutdown", pids)
	}
	time.Sleep(5 * time.Second) // the slow CLI would have started and primed by now
	after, err := e.st.EventsAfter(t.Context(), s.ID, last, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range after {
		if ev.Type == runner.TypeRunStarted {
			t.Errorf("a run was recorded after Shutdown: %s %s", ev.Type, ev.Payload)
		}
	}
	if pids := pidsWith(fresh.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the session still run 5 s after Shutdown", pids)
	}
}

// holdPrimes holds every model request that carries a prime turn, until
// its client goes away: such a prime never gets its answer. (The gateway
// answers a priming token itself, behind this wrapper; a request that
// gets through carries a prime the gateway no longer answers.)
func holdPrimes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			body, _ := io.ReadAll(r.Body) // then the server sees the client go
			r.Body = io.NopCloser(bytes.NewReader(body))
			if lastTextIsPrime(body) {
				select {
				case <-r.Context().Done():
				case <-time.After(15 * time.Second):
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// lastTextIsPrime says whether a Messages API request's last user
// message holds the prime turn's text: the prime's own request.
func lastTextIsPrime(body []byte) bool {
	var rq struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &rq) != nil {
		return false
	}
	for i := len(rq.Messages) - 1; i >= 0; i-- {
		if rq.Messages[i].Role != "user" {
			continue
		}
		last := rq.Messages[i].Content
		var text string
		if json.Unmarshal(last, &text) == nil {
			return text == streamjson.PrimeText
		}
		var blocks []struct{ Text string }
		_ = json.Unmarshal(last, &blocks)
		for _, b := range blocks {
			if b.Text == streamjson.PrimeText {
				return true
			}
		}
		return false
	}
	return false
}

// A resume ahead whose prime fails after the CLI wrote the prime turn to
// the conversation's transcript (here its model request never got an
// answer within the bound; a settings change, Shutdown or a run needing
// the slot kill it the same way) is killed before the rewind. The
// transcript then ends with the prime turn, and the next --resume must
// still not send it to the model.
func TestAttackFailedPrimeNeverResumed(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}, {Text: "Second reply."}}, envOptions{quiet: true,
		relayWrap: holdPrimes, runConfig: func(c *runner.Config) { c.PrimeTimeout = 2 * time.Second }})
	s := e.aheadSession()
	fresh, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // resumed ahead; its prime's request is held
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.transcriptOf(e.project.ID, fresh.ClaudeSessionID), streamjson.PrimeText) {
		if time.Now().After(deadline) {
			t.Fatal("the prime turn never reached the transcript")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // the prime times out and its process is killed
	w.conn.Close()
	if _, live := e.sup.Live(s.ID); live {
		t.Fatal("a process whose prime failed was kept")
	}
	if err := e.srv.prompt(t.Context(), fresh, "second", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil {
		t.Fatal(err)
	}
	e.waitModelSaw("second")
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if got, want := strings.Join(roles(last), "\n"), "user:first\nassistant:First reply.\nuser:second"; got != want {
		t.Fatalf("the --resume after a failed prime sent the model:\n%s\nwant:\n%s", got, want)
	}
	e.noPrimeSeen(s.ID)
}

// A new session that took a warm process whose prime failed mid-turn
// starts cold with the same conversation id: neither its first message
// nor a later --resume may send the model the prime. (Measured on
// 2.1.328: the CLI does not write a new conversation's transcript before
// its first answer, so the failed prime left none; this holds if that
// ever changes only through unprime.go.)
func TestAttackFailedWarmPrimeNeverSent(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "cold reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm(),
		relayWrap: holdPrimes, runConfig: func(c *runner.Config) { c.PrimeTimeout = 2 * time.Second }})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	e.warmPid(e.project.ID)
	id := e.createSessionForm(e.project.ID, "first words") // takes it while its prime is held
	e.waitModelSaw("first words")
	first := e.fake.Requests()[len(e.fake.Requests())-1]
	if got := strings.Join(roles(first), "\n"); got != "user:first words" {
		t.Fatalf("the first message after a failed warm prime sent the model:\n%s", got)
	}
	sess, err := e.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	e.waitTurnOver(id)
	e.endRun(id)
	if err := e.srv.prompt(t.Context(), sess, "and then", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil {
		t.Fatal(err)
	}
	e.waitModelSaw("and then")
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if got := strings.Join(roles(last), "\n"); got != "user:first words\nassistant:cold reply\nuser:and then" {
		t.Fatalf("a --resume after a failed warm prime sent the model:\n%s", got)
	}
	e.noPrimeSeen(id)
}

// A warm process primed (and rewound), taken by a new session, but not
// used because the project's settings changed meanwhile: the session
// starts cold with the conversation id whose transcript the prime wrote.
// The model gets the message alone, now and after a --resume.
func TestAttackPrimedWarmNotUsedLeavesNoTrace(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "cold reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(e.warm.ReadyPids(e.project.ID), pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process ahead never finished its prime")
		}
	}
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 3}); err != nil {
		t.Fatal(err)
	}
	id := e.createSessionForm(e.project.ID, "first words")
	e.waitModelSaw("first words")
	if got := e.livePid(id); got == pid {
		t.Fatalf("the session runs in the process started with the old settings (%d)", pid)
	}
	sess, err := e.st.GetSession(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	first := e.fake.Requests()[len(e.fake.Requests())-1]
	if got := strings.Join(roles(first), "\n"); got != "user:first words" {
		t.Fatalf("the cold start after an unused prime sent the model:\n%s", got)
	}
	e.waitTurnOver(id)
	// (Measured on 2.1.328: a primed process killed unused wrote no
	// transcript; if it ever does, the --resume below reads it.)
	e.endRun(id)
	if err := e.srv.prompt(t.Context(), sess, "and then", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil {
		t.Fatal(err)
	}
	e.waitModelSaw("and then")
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if got := strings.Join(roles(last), "\n"); got != "user:first words\nassistant:cold reply\nuser:and then" {
		t.Fatalf("a --resume after an unused prime sent the model:\n%s", got)
	}
	e.noPrimeSeen(id)
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
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	pid := e.warmPid(e.project.ID)
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(e.warm.ReadyPids(e.project.ID), pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process ahead never finished its prime")
		}
	}
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
	u, err := e.st.ProjectUsage(t.Context(), e.project.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if u.Requests != 2 {
		t.Errorf("the gateway charged %d requests for two messages: %+v", u.Requests, u)
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

// A resume ahead whose prime fails leaves nothing: no process, no files
// in the runtime directory, no slot held, no live token.
func TestAttackFailedPrimeLeavesNothing(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, maxRuns: 1,
		relayWrap: holdPrimes, runConfig: func(c *runner.Config) { c.PrimeTimeout = time.Second }})
	s := e.aheadSession()
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	files := func() []string {
		ents, _ := os.ReadDir(e.runtimeDir())
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		return names
	}
	idle := files()
	w := e.dial(s.ID, 0) // resumed ahead; its prime's request is held
	defer w.conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for len(pidsWith(sess.ClaudeSessionID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for len(pidsWith(sess.ClaudeSessionID)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of a failed prime are left", pidsWith(sess.ClaudeSessionID))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if _, live := e.sup.Live(s.ID); live {
		t.Fatal("a run of a failed prime is live")
	}
	if !e.sup.SlotFree() {
		t.Error("a failed prime holds the only slot")
	}
	if got := files(); !slices.Equal(got, idle) {
		t.Errorf("runtime files %v after a failed prime, %v before", got, idle)
	}
}

// A resume ahead of a conversation the CLI never saved fails at its
// prime ("No conversation found"): the message then starts the fresh
// conversation as an unprimed one would, and nothing of a prime shows.
func TestAttackPrimeOfAMissingConversation(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Fresh start, message received."}}, envOptions{quiet: true})
	s := e.newSession()
	if err := e.st.MarkClaudeStarted(t.Context(), s.ID); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // resumed ahead: no transcript, so its prime fails
	defer w.conn.Close()
	time.Sleep(3 * time.Second)
	if _, live := e.sup.Live(s.ID); live {
		t.Fatal("a process whose resume failed is live")
	}
	w.prompt("are you there?")
	w.waitFor(60*time.Second, "Claude could not resume the earlier conversation", "Fresh start, message received.")
	if n := len(e.fake.Requests()); n != 1 {
		t.Fatalf("the model got %d requests, want the message's", n)
	}
	if got := strings.Join(roles(e.fake.Requests()[0]), "\n"); got != "user:are you there?" {
		t.Fatalf("the fresh conversation sent the model:\n%s", got)
	}
	e.noPrimeSeen(s.ID)
}

// A transcript is the runs' to write: one that ends with a prime turn
// the CLI cannot rewind (here its parent is no message of the
// conversation) must not stop the session from resuming.
func TestAttackUnrewindablePrimeDoesNotBrickTheSession(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}, {Text: "Second reply."}}, envOptions{quiet: true})
	s := e.aheadSession()
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(ConfigDir(e.dataDir, e.project.ID), "projects", "*", sess.ClaudeSessionID+".jsonl"))
	if len(paths) != 1 {
		t.Fatalf("transcripts: %v", paths)
	}
	planted, _ := json.Marshal(map[string]any{"type": "user", "uuid": "7d3c1f0e-9a8b-4c2d-8e1f-0a9b8c7d6e5f",
		"parentUuid": "00000000-0000-4000-8000-000000000000", "sessionId": sess.ClaudeSessionID,
		"message": map[string]any{"role": "user", "content": streamjson.PrimeText}})
	f, err := os.OpenFile(paths[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write(append(planted, '\n'))
	f.Close()
	if err := e.srv.prompt(t.Context(), sess, "second", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil {
		t.Fatal(err)
	}
	e.waitModelSaw("second")
}

// A session archived while its resume ahead primes: archiving ends the
// session's process, and a start that was priming must not come alive
// after it.
func TestAttackArchiveDuringPrime(t *testing.T) {
	bin, flag := slowClaude(t, 3*time.Second)
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, claudeBin: bin})
	owner := e.member("owner@example.com", "Olga", roleOwner)
	s := e.aheadSession()
	sess, err := e.st.GetSession(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.dial(s.ID, 0) // resumed ahead; the prime waits for the slow CLI
	deadline := time.Now().Add(10 * time.Second)
	for len(pidsWith(sess.ClaudeSessionID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("opening the page started no process ahead")
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.conn.Close()
	if resp := e.postAs(owner, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %d", resp.StatusCode)
	}
	time.Sleep(6 * time.Second) // the slow CLI would have started and primed by now
	if _, live := e.sup.Live(s.ID); live {
		t.Error("the archived session has a live process: its start primed on after the archive")
	}
	if pids := pidsWith(sess.ClaudeSessionID); len(pids) > 0 {
		t.Errorf("processes %v of the archived session run", pids)
	}
}

// A warm process killed by a settings change while it primes (the pool's
// recheck) leaves nothing: no process, nothing sent to the model; the
// pool starts another, which primes, and a new session takes it.
func TestAttackSettingsChangeDuringWarmPrime(t *testing.T) {
	bin, flag := slowClaude(t, 2*time.Second)
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, fakeapi.Scenario{{Text: "warm reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm(), claudeBin: bin})
	e.get(fmt.Sprintf("/projects/%d", e.project.ID))
	old := e.warmPid(e.project.ID)
	time.Sleep(300 * time.Millisecond) // its prime waits for the slow CLI
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetProjectLimits(t.Context(), e.project.ID, store.ProjectLimits{SessionBudgetUSD: 4}); err != nil {
		t.Fatal(err)
	}
	e.warm.Recheck()
	pidGone(t, old, 10*time.Second)
	pid := e.warmPid(e.project.ID, old)
	for deadline := time.Now().Add(30 * time.Second); !slices.Contains(e.warm.ReadyPids(e.project.ID), pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new process ahead never finished its prime")
		}
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests before any message", n)
	}
	id := e.createSessionForm(e.project.ID, "first words")
	e.waitModelSaw("first words")
	if got := e.livePid(id); got != pid {
		t.Fatalf("the session runs in %d, not in the new primed process %d", got, pid)
	}
	if got := strings.Join(roles(e.fake.Requests()[0]), "\n"); got != "user:first words" {
		t.Fatalf("the model got:\n%s", got)
	}
	e.noPrimeSeen(id)
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
	before, err := e.st.ProjectUsage(t.Context(), e.project.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
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
	after, err := e.st.ProjectUsage(t.Context(), e.project.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Requests - before.Requests; got != 3 { // the CLI's two and the curl
		t.Errorf("the gateway charged %d requests for the message's turn, want 3", got)
	}
}
