package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/reach/mail/smtptest"
	"parley/reach/webpush/pushtest"
	"parley/runner/fakeapi"
	"parley/store"
)

// Helpers of the reach end-to-end tests (reach_*_test.go), on top of
// reach_harness_test.go.

// colourScenario is the fake model's script of an ask_user question a
// notification can answer, then a reply that shows the answer arrived.
func colourScenario() fakeapi.Scenario {
	return fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
	}
}

// newReachTestEnv is an env with reach on and the project's reach settings
// changed by set (starting from the defaults).
func newReachTestEnv(t *testing.T, set func(*store.ProjectReach)) *env {
	t.Helper()
	e := newEnv(t, colourScenario(), envOptions{reach: true, quiet: true})
	e.setReach(set)
	return e
}

// setReach stores the project's reach settings: the defaults changed by set.
func (e *env) setReach(set func(*store.ProjectReach)) {
	e.t.Helper()
	pr := store.DefaultProjectReach
	pr.Named = nil
	if set != nil {
		set(&pr)
	}
	if err := e.st.SetProjectReach(e.t.Context(), e.project.ID, pr); err != nil {
		e.t.Fatal(err)
	}
}

// pendingAsk waits until the session has one pending ask and returns it.
func (e *env) pendingAsk(sessionID string) store.Input {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ins, err := e.st.PendingInputs(e.t.Context(), sessionID)
		if err == nil && len(ins) == 1 {
			return ins[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("no pending ask in session %s within 60 s", sessionID)
	return store.Input{}
}

// waitDeliveries waits until the ask's deliveries satisfy ok and returns
// them.
func (e *env) waitDeliveries(inputID string, timeout time.Duration, ok func([]store.Delivery) bool) []store.Delivery {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var ds []store.Delivery
	for {
		var err error
		ds, err = e.st.Deliveries(e.t.Context(), inputID)
		if err == nil && ok(ds) {
			return ds
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("deliveries of %s after %s: %s", inputID, timeout, showDeliveries(ds))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hasDelivery says whether ds holds one on channel with outcome whose
// target contains target.
func hasDelivery(ds []store.Delivery, channel, outcome, target string) bool {
	for _, d := range ds {
		if d.Channel == channel && d.Outcome == outcome && strings.Contains(d.Target, target) {
			return true
		}
	}
	return false
}

func showDeliveries(ds []store.Delivery) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  " + d.Channel + " " + d.Outcome + " " + d.Target + " " + d.Detail)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// noPush fails if a push arrives within d.
func (e *env) noPush(d time.Duration, why string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if p, err := e.reach.push.Next(ctx); err == nil {
		e.t.Fatalf("%s: a push arrived at %s: %s", why, p.Endpoint, p.Payload)
	}
}

// pushTo waits for the next push and checks it went to sub's endpoint.
func (e *env) pushTo(endpoint, who string, timeout time.Duration) (pushtest.Push, reach.Message) {
	e.t.Helper()
	p, m := e.nextPush(timeout)
	if p.Endpoint != endpoint {
		e.t.Fatalf("a push went to %s (%+v), want %s's device %s", p.Endpoint, m, who, endpoint)
	}
	return p, m
}

// nextMail waits for the next e-mail the test's SMTP server receives.
func (e *env) nextMail(timeout time.Duration) smtptest.Mail {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := e.reach.smtp.Next(ctx)
	if err != nil {
		e.t.Fatalf("no e-mail within %s: %v", timeout, err)
	}
	return m
}

// noMail fails if an e-mail arrives within d.
func (e *env) noMail(d time.Duration, why string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := e.reach.smtp.Next(ctx); err == nil {
		e.t.Fatalf("%s: an e-mail to %v arrived: %q", why, m.To, m.Subject)
	}
}

// quietAroundNow is quiet hours, in UTC, from an hour ago to an hour from
// now (across midnight when it must).
func quietAroundNow() store.UserReach {
	now := time.Now().UTC()
	return store.UserReach{QuietFrom: now.Add(-time.Hour).Format("15:04"), QuietTo: now.Add(time.Hour).Format("15:04"), TZ: "UTC"}
}

// askStatus reads the ask's status now.
func (e *env) askStatus(id string) string {
	e.t.Helper()
	in, err := e.st.GetInput(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return in.Status
}

// wantModelGot waits for the model's second request and checks the ask's
// tool result carries want.
func (e *env) wantModelGot(want string) {
	e.t.Helper()
	got, _ := e.lastToolResult(2)
	if !strings.Contains(got, want) {
		e.t.Errorf("the model got %q, want %q", got, want)
	}
}

// visible sends a page's visibility report on w.
func (w *ws) visible(v bool) {
	w.t.Helper()
	w.send(map[string]any{"action": "visible", "visible": v})
}

// asJSON is v as JSON, for failure messages.
func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
