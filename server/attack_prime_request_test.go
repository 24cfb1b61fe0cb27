package server

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
)

// uuidRE matches the ids that differ from one conversation to the next.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// requestShape is what the model is sent in r, ids masked: its system
// prompt, tools and messages, each whole.
func requestShape(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range []string{"system", "tools", "messages", "model", "max_tokens", "thinking", "tool_choice"} {
		out[k] = uuidRE.ReplaceAllString(string(m[k]), "<id>")
	}
	return out
}

// The first request of a session that took a primed process is the one a
// cold start sends, whole: the prime must not have used up what the CLI
// sends with a process's first message (its environment, date, tool and
// skill listings) nor changed its system prompt or tools.
func TestAttackPrimedFirstRequestIsTheColdOne(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "a reply"}}, envOptions{quiet: true, perTurn: true, warm: testWarm()})
	pid := e.readyWarmPid(e.project.ID)
	warmID := e.createSessionForm(e.project.ID, "first words")
	if got := e.livePid(warmID); got != pid {
		t.Fatalf("the session runs in %d, not in the primed process %d", got, pid)
	}
	e.waitModelSaw("first words")
	e.waitTurnOver(warmID)
	cold := e.newSession()
	w := e.dial(cold.ID, 0)
	defer w.conn.Close()
	w.prompt("first words")
	w.waitFor(60*time.Second, "turn-result")
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests for two messages", len(reqs))
	}
	primed, unprimed := requestShape(t, reqs[0].Raw), requestShape(t, reqs[1].Raw)
	for k, v := range unprimed {
		if primed[k] != v {
			t.Errorf("the primed first request's %s differs from a cold start's:\nprimed: %.3000s\ncold:   %.3000s", k, diffFrom(primed[k], v), diffFrom(v, primed[k]))
		}
	}
}

// diffFrom is a from its first difference with b.
func diffFrom(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return strings.TrimSpace(fmt.Sprintf("[at %d] %s", i, a[max(0, i-200):]))
}

// The same for a resume: the message after a primed resume ahead sends
// the model exactly what the message after a cold --resume sends.
func TestAttackPrimedResumeRequestIsTheColdOne(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First reply."}}, envOptions{quiet: true, perTurn: true})
	a, b := e.aheadSession(), e.aheadSession()
	w := e.dial(a.ID, 0) // resumed ahead and primed
	defer w.conn.Close()
	if !e.waitLive(a.ID, true, 30*time.Second) {
		t.Fatal("opening the session did not resume it ahead")
	}
	time.Sleep(2 * time.Second) // its prime is done
	w.prompt("second")
	e.waitModelSaw("second")
	e.waitTurnOver(a.ID)
	fresh, err := e.st.GetSession(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.fake.Requests())
	if err := e.srv.prompt(t.Context(), fresh, "second", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil { // a cold --resume
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); len(e.fake.Requests()) == n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cold resume's message never reached the model")
		}
	}
	reqs := e.fake.Requests()
	primed, unprimed := requestShape(t, reqs[n-1].Raw), requestShape(t, reqs[n].Raw)
	for k, v := range unprimed {
		if primed[k] != v {
			t.Errorf("the primed resume's request's %s differs from a cold resume's:\nprimed: %.3000s\ncold:   %.3000s", k, diffFrom(primed[k], v), diffFrom(v, primed[k]))
		}
	}
}

// A session whose last turn was interrupted, resumed ahead and primed,
// sends the model what a twin session resumed cold sends.
func TestAttackPrimeAfterAnInterruptedTurn(t *testing.T) {
	holdA, holdB := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(holdA); close(holdB) })
	e := newEnv(t, fakeapi.Scenario{{Text: "Thinking hard", Hold: holdA}, {Text: "Thinking hard", Hold: holdB}, {Text: "Back."}, {Text: "Back."}}, envOptions{quiet: true})
	var sessions []string
	for i := range 2 {
		s := e.newSession()
		w := e.dial(s.ID, 0)
		w.prompt("first")
		if err := e.fake.WaitRequests(t.Context(), i+1); err != nil {
			t.Fatal(err)
		}
		w.waitFor(60*time.Second, "Thinking hard")
		if err := e.sup.Interrupt(t.Context(), s.ID, "you"); err != nil {
			t.Fatal(err)
		}
		e.waitTurnOver(s.ID)
		w.conn.Close()
		e.endRun(s.ID)
		sessions = append(sessions, s.ID)
	}
	w := e.dial(sessions[0], 0) // resumed ahead and primed
	defer w.conn.Close()
	if !e.waitLive(sessions[0], true, 30*time.Second) {
		t.Fatal("opening the session did not resume it ahead")
	}
	time.Sleep(2 * time.Second) // its prime is done
	w.prompt("second")
	e.waitModelSaw("second")
	e.waitTurnOver(sessions[0])
	b, err := e.st.GetSession(t.Context(), sessions[1])
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.fake.Requests())
	if err := e.srv.prompt(t.Context(), b, "second", runner.Author{Name: e.user.Name, ID: e.user.ID}); err != nil { // a cold --resume
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); len(e.fake.Requests()) == n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cold resume's message never reached the model")
		}
	}
	reqs := e.fake.Requests()
	t.Logf("primed: %q", roles(reqs[n-1]))
	primed, unprimed := requestShape(t, reqs[n-1].Raw), requestShape(t, reqs[n].Raw)
	for k, v := range unprimed {
		if primed[k] != v {
			t.Errorf("after an interrupted turn, the primed resume's request's %s differs from a cold resume's:\nprimed: %.3000s\ncold:   %.3000s", k, diffFrom(primed[k], v), diffFrom(v, primed[k]))
		}
	}
	e.noPrimeSeen(sessions[0])
}
