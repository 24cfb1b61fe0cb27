package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
	"parley/streamjson"
)

// Attacks on a prime that fails (runner/prime.go, runner/unprime.go): a
// prime killed or timed out mid-turn must leave nothing the model sees,
// now or at a later --resume, and nothing running or held.

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
		// Long enough for a loaded machine's CLI to write the prime to its
		// transcript before the timeout (2 s failed once at load 16).
		relayWrap: holdPrimes, runConfig: func(c *runner.Config) { c.PrimeTimeout = 6 * time.Second }})
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
	// The prime times out and its process is killed.
	for deadline := time.Now().Add(30 * time.Second); len(pidsWith(fresh.ClaudeSessionID)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process whose prime failed still runs")
		}
	}
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
	if got := e.coldResumeSends(sess, "and then"); got != "user:first words\nassistant:cold reply\nuser:and then" {
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
	pid := e.readyWarmPid(e.project.ID)
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
	if got := e.coldResumeSends(sess, "and then"); got != "user:first words\nassistant:cold reply\nuser:and then" {
		t.Fatalf("a --resume after an unused prime sent the model:\n%s", got)
	}
	e.noPrimeSeen(id)
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
