package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/asks"
	"parley/reach"
	"parley/reach/slack/slacktest"
	"parley/runner/fakeapi"
	"parley/store"
)

// onceRounds is how many asks race: each is answered from six surfaces
// at the same moment.
const onceRounds = 3

// TestReachExactlyOnceAcrossSurfaces: one ask reaches a phone (Web
// Push), an inbox (e-mail) and a Slack channel; then six people answer it
// at the same moment, each from another surface: the page's socket, the
// notification's action (POST /reach/answer), the e-mail's confirm POST,
// a Slack click, `parley asks answer` and MCP respond. Exactly one wins:
// Postgres has it answered once by the winner, the log has one
// input_resolved event for it, the model gets one tool_result for it, and
// every other surface says it was already answered, none with a 5xx. Three
// asks race in turn, so a lost race is likely to show.
func TestReachExactlyOnceAcrossSurfaces(t *testing.T) {
	sc := fakeapi.Scenario{}
	for range onceRounds {
		sc = append(sc, fakeapi.Step{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()})
	}
	e := newEnv(t, append(sc, fakeapi.Step{Text: "All answered."}), envOptions{reach: true, quiet: true})
	r := e.onceRacers(t)
	sess := e.newSession()
	r.page = e.dial(sess.ID, 0) // never reports itself visible: nobody is "looking"
	r.page.prompt("pick colours")

	prev := ""
	for round := range onceRounds {
		in := e.waitInputAfter(sess.ID, prev)
		prev = in.ID
		r.race(t, round, in)
	}
	if !strings.Contains(r.seen.String(), "All answered.") { // a page that lost may have read it already
		r.page.waitFor(60*time.Second, "All answered.")
	}
	e.onceOnTheRecord(t, sess.ID)
}

// onceRacers are the six answerers of one ask, each a member answering
// from their own surface, so the ask's answered_by names the winner.
type onceRacers struct {
	e                            *env
	page                         *ws
	you, bob, cat, dan, eve, fay *testUser
	asks                         asks.Client
	mcp                          *mcp.ClientSession
	slackProject                 string
	responses                    int             // Slack response_url posts seen so far
	seen                         strings.Builder // the page's frames read while waiting for its refusals
}

// onceRacers sets the project up: every member is reached first, no
// escalation; bob has a phone, cat takes asks by e-mail, dan is on Slack,
// eve answers from a terminal, fay through MCP, you (the starter) on the
// page.
func (e *env) onceRacers(t *testing.T) *onceRacers {
	r := &onceRacers{e: e, you: e.user}
	r.bob = e.member("bob@example.com", "Bob", roleMember)
	r.cat = e.member("cat@example.com", "Cat", roleMember)
	r.dan = e.member("dan@example.com", "Dan", roleMember)
	r.eve = e.member("eve@example.com", "Eve", roleMember)
	r.fay = e.member("fay@example.com", "Fay", roleMember)
	ctx := t.Context()
	if err := e.st.SetProjectReach(ctx, e.project.ID, store.ProjectReach{FirstReach: "all", EscalateAfter: 0,
		SlackToken: slackToken, SlackSecret: slackSecret, SlackChannel: "parley"}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.SetUserReach(ctx, r.cat.ID, store.UserReach{QuietFrom: "00:00", QuietTo: "00:00", TZ: "UTC", EmailAsks: true}); err != nil {
		t.Fatal(err)
	}
	e.reach.slack.AddUser("U0DAN", r.dan.Email)
	e.subscribe(r.bob, "phone")
	e.listenForTerminals(t)
	c, err := asks.NewDB(ctx, e.st, r.eve.Email)
	if err != nil {
		t.Fatal(err)
	}
	r.asks = c
	r.mcp = e.mcpClient(e.apiToken(r.fay), "", nil)
	r.slackProject = strconv.FormatInt(e.project.ID, 10)
	return r
}

// raceOutcome is what one surface said to its answer.
type raceOutcome struct {
	surface, by string // by: the member who answered from it
	won         bool
	text        string
	err         error // the surface failed (5xx, transport, protocol)
}

// race answers in from every surface at once and checks that exactly one
// won and the others said why not.
func (r *onceRacers) race(t *testing.T, round int, in store.Input) {
	t.Helper()
	e := r.e
	_, pm := r.pushFor(t, in.ID)
	mailToken := r.mailFor(t, in.ID)
	channel, ts := r.slackPostFor(t, in.ID)
	r.responses = r.count("response_url")

	start := make(chan struct{})
	outs := make([]raceOutcome, 6)
	var wg sync.WaitGroup
	racer := func(i int, surface string, u *testUser, answer func() raceOutcome) {
		wg.Go(func() {
			<-start
			o := answer()
			o.surface, o.by = surface, u.Name
			outs[i] = o
		})
	}
	racer(0, "page", r.you, func() raceOutcome {
		r.page.answer(in, map[string]any{"choice": "Blue"})
		return raceOutcome{} // settled after the race, from the ask's row and the page's frames
	})
	racer(1, "push", r.bob, func() raceOutcome {
		return postOutcome(pm.AnswerURL, url.Values{"token": {pm.Token}, "action": {"choice:1"}})
	})
	racer(2, "e-mail", r.cat, func() raceOutcome {
		return postOutcome(e.web.URL+"/reach/a/"+mailToken, url.Values{"action": {"choice:0"}})
	})
	racer(3, "slack", r.dan, func() raceOutcome {
		req := e.reach.slack.Click(t, e.web.URL+"/slack/interactions/"+r.slackProject, slackSecret, "U0DAN", in.ID, "choice:1", channel, ts, time.Now())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return raceOutcome{err: err}
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return raceOutcome{err: fmt.Errorf("slack click: %s", res.Status)}
		}
		return raceOutcome{} // Slack is told at once; the outcome comes later
	})
	racer(4, "parley asks", r.eve, func() raceOutcome {
		var out strings.Builder
		err := asks.Run(t.Context(), []string{"answer", in.ID, "--choice", "Green"}, r.asks, &out)
		if err != nil {
			return raceOutcome{text: err.Error()}
		}
		return raceOutcome{won: true, text: out.String()}
	})
	racer(5, "mcp", r.fay, func() raceOutcome {
		return mcpOutcome(t.Context(), r.mcp, map[string]any{"sessionId": in.SessionID, "inputId": in.ID,
			"decision": "allow", "answers": map[string]any{"Which colour?": "Blue"}})
	})
	close(start)
	wg.Wait()

	got := r.settle(t, in, outs)
	var winners []string
	for _, o := range outs {
		switch {
		case o.err != nil:
			t.Errorf("round %d: %s (%s) failed: %v", round, o.surface, o.by, o.err)
		case o.won:
			winners = append(winners, o.surface+" ("+o.by+")")
		case !saysAlreadyAnswered(o.text):
			t.Errorf("round %d: %s (%s) lost and said %q, want already answered", round, o.surface, o.by, o.text)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("round %d: winners %v, want exactly one (the ask: %s by %q)", round, winners, got.Status, got.AnsweredBy)
	}
	t.Logf("round %d: won by %s", round, winners[0])
}

// settle waits for what the page and Slack say (they answer
// asynchronously) and returns the ask as Postgres has it.
func (r *onceRacers) settle(t *testing.T, in store.Input, outs []raceOutcome) store.Input {
	t.Helper()
	got := r.answered(t, in.ID)
	for i := range outs {
		o := &outs[i]
		switch o.surface {
		case "page":
			if o.won = got.AnsweredBy == r.you.Name; !o.won {
				r.seen.WriteString(r.page.waitFor(30*time.Second, "This question was already answered."))
				o.text = "This question was already answered."
			}
		case "slack":
			if o.won = got.AnsweredBy == r.dan.Name; !o.won && o.err == nil {
				o.text = r.slackRefusal(t)
			}
		}
	}
	return got
}

// answered waits until the ask is no longer pending.
func (r *onceRacers) answered(t *testing.T, id string) store.Input {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		in, err := r.e.st.GetInput(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != "pending" {
			if in.Status != "answered" {
				t.Fatalf("ask %s is %s, want answered", id, in.Status)
			}
			return in
		}
	}
	t.Fatalf("ask %s still pending after the race", id)
	return store.Input{}
}

// saysAlreadyAnswered: the sentences a loser may see.
func saysAlreadyAnswered(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "already answered") || strings.Contains(s, "expired or was already used")
}

// postOutcome posts an answer form as a service worker or the e-mail's
// confirm page does: 200 wins, 409/403 lose, anything else fails.
func postOutcome(u string, form url.Values) raceOutcome {
	res, err := http.PostForm(u, form)
	if err != nil {
		return raceOutcome{err: err}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	switch res.StatusCode {
	case http.StatusOK:
		return raceOutcome{won: true, text: string(b)}
	case http.StatusConflict, http.StatusForbidden:
		return raceOutcome{text: string(b)}
	}
	return raceOutcome{err: fmt.Errorf("%s: %s", res.Status, b)}
}

// mcpOutcome calls respond: a result wins, an error result loses, a
// protocol error fails.
func mcpOutcome(ctx context.Context, cs *mcp.ClientSession, args map[string]any) raceOutcome {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "respond", Arguments: args})
	if err != nil {
		return raceOutcome{err: err}
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return raceOutcome{won: !res.IsError, text: b.String()}
}

// pushFor waits for bob's phone to get the ask (skipping take-backs).
func (r *onceRacers) pushFor(t *testing.T, inputID string) (time.Time, reach.Message) {
	t.Helper()
	for {
		p, m := r.e.nextPush(60 * time.Second)
		if m.Type == reach.TypeAsk && m.InputID == inputID {
			if m.Token == "" {
				t.Fatalf("the push of %s has no token: %+v", inputID, m)
			}
			return p.At, m
		}
	}
}

var confirmLink = regexp.MustCompile(`/reach/a/([A-Za-z0-9_-]+)\?action=`)

// mailFor waits for cat's e-mail of the ask and returns its answer token.
func (r *onceRacers) mailFor(t *testing.T, inputID string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		m, err := r.e.reach.smtp.Next(ctx)
		if err != nil {
			t.Fatalf("no e-mail of ask %s: %v", inputID, err)
		}
		if !strings.Contains(m.Text, inputID) {
			continue
		}
		if k := confirmLink.FindStringSubmatch(m.Text); k != nil {
			return k[1]
		}
		t.Fatalf("the e-mail of %s has no confirm link:\n%s", inputID, m.Text)
	}
}

// slackPostFor waits for the ask's message in the Slack channel.
func (r *onceRacers) slackPostFor(t *testing.T, inputID string) (channel, ts string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, c := range r.e.reach.slack.Calls() {
			if c.Method == "chat.postMessage" && c.Error == "" && strings.Contains(string(c.Blocks), inputID) {
				return slacktest.ChannelID(c.Channel), c.TS
			}
		}
	}
	t.Fatalf("ask %s was not posted to Slack; calls: %+v", inputID, r.e.reach.slack.Calls())
	return "", ""
}

// count is how many calls of method the Slack fake took.
func (r *onceRacers) count(method string) int {
	n := 0
	for _, c := range r.e.reach.slack.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// slackRefusal waits for what Slack's clicker was told.
func (r *onceRacers) slackRefusal(t *testing.T) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var said []string
		for _, c := range r.e.reach.slack.Calls() {
			if c.Method == "response_url" {
				said = append(said, c.Text)
			}
		}
		if len(said) > r.responses {
			r.responses = len(said)
			return said[len(said)-1]
		}
	}
	t.Fatalf("the Slack clicker lost the race and was told nothing")
	return ""
}

// onceOnTheRecord checks the log and the model: one input_resolved event
// per ask, and the model got each ask's tool_result exactly once.
func (e *env) onceOnTheRecord(t *testing.T, sessionID string) {
	t.Helper()
	evs, err := e.st.EventsAfter(t.Context(), sessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	resolved := map[string]int{}
	for _, ev := range evs {
		if ev.Type != "input_resolved" {
			continue
		}
		var p struct {
			InputID string `json:"input_id"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		resolved[p.InputID]++
	}
	if len(resolved) != onceRounds {
		t.Errorf("input_resolved events by ask: %v, want %d asks", resolved, onceRounds)
	}
	for id, n := range resolved {
		if n != 1 {
			t.Errorf("ask %s: %d input_resolved events, want 1", id, n)
		}
	}
	reqs := e.fake.Requests()
	if len(reqs) != onceRounds+1 {
		t.Fatalf("%d model requests, want %d (one per answer and the prompt)", len(reqs), onceRounds+1)
	}
	last := reqs[len(reqs)-1]
	for i := range onceRounds {
		id := reqs[i].ToolUseID
		if got, _, _, _ := reqs[i+1].LastToolResult(); got != id {
			t.Errorf("request %d answers %q, want the ask %q", i+1, got, id)
		}
		n := 0
		for _, m := range last.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_result" && b.ToolUseID == id {
					n++
				}
			}
		}
		if n != 1 {
			t.Errorf("the model's conversation holds %d tool_results for ask %d, want 1", n, i)
		}
	}
}
