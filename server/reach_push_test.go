package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/runner/fakeapi"
)

// twoColours is an ask_user question a notification can answer: one
// single-choice question with two options.
func twoColours() map[string]any {
	return map[string]any{"question": "Which colour?", "options": []map[string]string{{"label": "Blue"}, {"label": "Green"}}}
}

// TestPushAnswersTheAsk: nobody is looking, so an ask reaches its
// starter's phone by Web Push (VAPID checked and the payload decrypted
// by a real RFC 8030 push service); the notification's action answers it
// through its single-use token, with no sign-in, the real CLI gets the
// answer, and the device then shows "answered by". The token works once.
func TestPushAnswersTheAsk(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	p, m := e.nextPush(60 * time.Second)
	if m.Type != reach.TypeAsk || m.Body != "Which colour?" || p.Urgency != "high" || m.Token == "" {
		t.Fatalf("push = %+v (urgency %q), want the ask with a token", m, p.Urgency)
	}
	if len(m.Actions) != 2 || m.Actions[1].ID != "choice:1" || m.Actions[1].Title != "Green" {
		t.Fatalf("actions = %+v, want Blue and Green", m.Actions)
	}
	if !strings.HasPrefix(m.URL, e.web.URL+"/sessions/"+sess.ID) {
		t.Errorf("url = %q, want the session's page", m.URL)
	}
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("answer from the notification: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Green it is.")
	if _, got, _, _ := e.fake.Requests()[1].LastToolResult(); !strings.Contains(got, "User selected: Green") {
		t.Errorf("the model got %q, want the answer", got)
	}
	if code, text := e.answerWithToken(m, "choice:0"); code != http.StatusForbidden {
		t.Errorf("the token used again: %d %q, want 403", code, text)
	}
	_, back := e.nextPush(30 * time.Second)
	if back.Type != reach.TypeAnswered || back.By != "you" || back.Via != "you's phone" || back.Token != "" {
		t.Errorf("take-back = %+v, want answered by you from you's phone", back)
	}
	in, _ := e.st.GetInput(t.Context(), m.InputID)
	if in.Status != "answered" || !strings.Contains(string(in.Answer), `"via": "you's phone"`) {
		t.Errorf("ask = %s %s, want answered via the phone", in.Status, in.Answer)
	}
}

// TestPushSubscriptionsAPI: the device API takes a browser's
// PushSubscription with the CSRF token, refuses an endpoint Parley must
// not post to (plain http or a private address not in
// PARLEY_PUSH_HOSTS), a malformed or oversized body and a request
// without the token, and removes only the person's own devices.
func TestPushSubscriptionsAPI(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	other := e.member("other@example.com", "Other", roleMember)
	sub := `{"endpoint":%q,"keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}}`
	for _, bad := range []struct{ body, want string }{
		{fmt.Sprintf(sub, "http://push.example.com/x"), "https"},
		{fmt.Sprintf(sub, "https://10.1.2.3/x"), "10.1.2.3"},
		{`{"endpoint":"https://push.example.com/x"}`, "keys"},
		{`not json`, "PushSubscription"},
		{`{"endpoint":"` + strings.Repeat("a", 9000) + `"}`, "PushSubscription"},
	} {
		res, text := e.jsonAs(e.user, http.MethodPost, "/push/subscriptions", bad.body)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(text, bad.want) {
			t.Errorf("%.60s: %s %s, want 400 naming %q", bad.body, res.Status, text, bad.want)
		}
	}
	body := fmt.Sprintf(sub, "https://push.example.com/device-1")
	res, _ := e.jsonAs(nil, http.MethodPost, "/push/subscriptions", body)
	if res.StatusCode == http.StatusCreated {
		t.Error("a signed-out request added a device")
	}
	noCSRF := *e.user
	noCSRF.CSRF = "forged"
	if res, _ := e.jsonAs(&noCSRF, http.MethodPost, "/push/subscriptions", body); res.StatusCode == http.StatusCreated {
		t.Error("a request with a forged CSRF token added a device")
	}
	res, text := e.jsonAs(e.user, http.MethodPost, "/push/subscriptions", body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("a good subscription: %s %s", res.Status, text)
	}
	ds, _ := e.st.PushDevices(t.Context(), e.user.ID)
	if len(ds) != 1 {
		t.Fatalf("devices = %d, want 1", len(ds))
	}
	path := fmt.Sprintf("/push/subscriptions/%d", ds[0].ID)
	if res, _ := e.jsonAs(other, http.MethodDelete, path, ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("another person removing the device: %s, want 404", res.Status)
	}
	if res, _ := e.jsonAs(e.user, http.MethodDelete, path, ""); res.StatusCode != http.StatusNoContent {
		t.Errorf("removing one's own device: %s, want 204", res.Status)
	}
	if ds, _ := e.st.PushDevices(t.Context(), e.user.ID); len(ds) != 0 {
		t.Errorf("devices after removal = %d", len(ds))
	}
}

// TestPushGoneDeviceIsDropped: a device its push service answers 410 for
// is removed at the next push, and the delivery says it failed.
func TestPushGoneDeviceIsDropped(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()}}, envOptions{reach: true, quiet: true})
	sub := e.subscribe(e.user, "old phone")
	e.reach.push.Gone(sub)
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, sess.ID)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, _ := e.st.PushDevices(t.Context(), e.user.ID)
		dl, _ := e.st.Deliveries(t.Context(), in.ID)
		if len(ds) == 0 && len(dl) == 1 && dl[0].Outcome == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("devices %d, deliveries %+v: want the gone device removed and a failed delivery", len(ds), dl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPushExpiredAsk: an ask nobody answers times out; the device that
// showed it is told it closed, and the delivery records "expired".
func TestPushExpiredAsk(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Nobody answered; going with Blue."},
	}, envOptions{reach: true, quiet: true, askTimeout: 3 * time.Second})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	_, m := e.nextPush(60 * time.Second)
	_, back := e.nextPush(60 * time.Second)
	if back.Type != reach.TypeAnswered || back.InputID != m.InputID || !strings.Contains(back.By, "timed out") {
		t.Errorf("after the timeout the device got %+v, want the ask closed as timed out", back)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ds, _ := e.st.Deliveries(t.Context(), m.InputID)
		if len(ds) == 2 && ds[0].Outcome == "sent" && ds[1].Outcome == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries = %+v, want sent then expired", ds)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
