package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/reach/slack/slacktest"
	"parley/runner/fakeapi"
	"parley/store"
)

// Attacks on reach's token answers (issue 30): an outsider, a member
// removed or archived out, and the model, which writes the ask's text.

// hostileQuestion is an ask_user question whose text and option try to
// break out of the pages and payloads that show them.
func hostileQuestion() map[string]any {
	return map[string]any{"question": `Which <script>alert("q")</script> "colour"?`,
		"options": []map[string]string{{"label": "Blue"}, {"label": `Gr"een<img src=x onerror=alert(1)>`}}}
}

// tokenRequest sends method to the answer URL with form as the body and
// query in the URL, no cookie, and returns the status and body.
func tokenRequest(t *testing.T, method, rawURL string, query, form url.Values) (*http.Response, string) {
	t.Helper()
	if query != nil {
		rawURL += "?" + query.Encode()
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, rawURL, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// TestReachAnswerEndpointAttacks: POST /reach/answer answers only a POST
// whose body carries the token and an action the ask offers. A GET or PUT,
// the token in the query string, a missing field, a huge body, the
// action "open" answer nothing and leave the token usable; the e-mail
// confirm page (GET and HEAD) never answers, escapes the model's text,
// sends no Referer to other origins and keeps the CSP; a used token and a made-up one get
// the same refusal, so a guess learns nothing.
func TestReachAnswerEndpointAttacks(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: hostileQuestion()},
		{Text: "Noted."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	_, m := e.nextPush(60 * time.Second)
	if m.Token == "" || len(m.Actions) != 2 {
		t.Fatalf("push = %+v, want a token and two actions", m)
	}
	good := url.Values{"token": {m.Token}, "action": {"choice:1"}}
	pending := func(what string) {
		t.Helper()
		if s := e.askStatus(m.InputID); s != "pending" {
			t.Fatalf("after %s the ask is %s, want pending", what, s)
		}
	}
	for _, tt := range []struct {
		name        string
		method      string
		query, form url.Values
		path        string
	}{
		{"GET with the token in the query", http.MethodGet, good, nil, "/reach/answer"},
		{"PUT with the form", http.MethodPut, nil, good, "/reach/answer"},
		{"the token in the query string", http.MethodPost, url.Values{"token": {m.Token}}, url.Values{"action": {"choice:1"}}, "/reach/answer"},
		{"no action", http.MethodPost, nil, url.Values{"token": {m.Token}}, "/reach/answer"},
		{"no token", http.MethodPost, nil, url.Values{"action": {"choice:1"}}, "/reach/answer"},
		{"the action open", http.MethodPost, nil, url.Values{"token": {m.Token}, "action": {"open"}}, "/reach/answer"},
		{"an action the ask lacks", http.MethodPost, nil, url.Values{"token": {m.Token}, "action": {"choice:2"}}, "/reach/answer"},
		{"a huge body", http.MethodPost, nil, url.Values{"token": {m.Token}, "action": {"choice:1"}, "pad": {strings.Repeat("x", 4<<20)}}, "/reach/answer"},
		{"the confirm page's GET", http.MethodGet, url.Values{"action": {"choice:1"}}, nil, "/reach/a/" + m.Token},
		{"the confirm page's HEAD", http.MethodHead, url.Values{"action": {"choice:1"}}, nil, "/reach/a/" + m.Token},
		{"the confirm POST without action", http.MethodPost, nil, url.Values{}, "/reach/a/" + m.Token},
		{"the confirm POST with the token in the form only", http.MethodPost, nil, good, "/reach/a/not-the-token"},
	} {
		res, text := tokenRequest(t, tt.method, e.web.URL+tt.path, tt.query, tt.form)
		t.Logf("%s: %d %.80q", tt.name, res.StatusCode, text)
		if strings.HasPrefix(tt.name, "the confirm page") {
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s: %s, want the page", tt.name, res.Status)
			}
		} else if res.StatusCode < 300 || res.StatusCode >= 500 {
			t.Errorf("%s: %s %q, want a 3xx/4xx refusal", tt.name, res.Status, text)
		}
		pending(tt.name)
	}

	// The confirm page: the model's text escaped, no Referer, CSP kept.
	res, page := tokenRequest(t, http.MethodGet, e.web.URL+"/reach/a/"+m.Token, url.Values{"action": {"choice:1"}}, nil)
	for _, raw := range []string{"<script>", "<img", `"colour"`} {
		if strings.Contains(page, raw) {
			t.Errorf("the confirm page holds %q unescaped:\n%s", raw, page)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;") || !strings.Contains(page, "Gr&#34;een&lt;img") {
		t.Errorf("the confirm page does not show the escaped question and choice:\n%s", page)
	}
	if got := res.Header.Get("Referrer-Policy"); got != "same-origin" && got != "no-referrer" {
		t.Errorf("Referrer-Policy = %q, want none to other origins (the token is in the URL)", got)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src") && !strings.Contains(csp, "default-src") {
		t.Errorf("Content-Security-Policy = %q, want the site's policy", csp)
	}
	if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	pending("reading the confirm page")

	// A made-up token and, after the answer, the used one: the same refusal.
	_, made := tokenRequest(t, http.MethodPost, e.web.URL+"/reach/answer", nil, url.Values{"token": {strings.Repeat("A", 43)}, "action": {"choice:1"}})
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("the good answer after the attacks: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Noted.")
	res, used := tokenRequest(t, http.MethodPost, e.web.URL+"/reach/answer", nil, good)
	if res.StatusCode != http.StatusForbidden || used != made {
		t.Errorf("a used token: %d %q; a made-up one: %q; want the same 403", res.StatusCode, used, made)
	}
}

// TestReachTokenOfARemovedMember: Bob's phone got the ask; an owner
// removes him from the project before he taps. His token answers
// nothing, says why, and the ask stays pending.
func TestReachTokenOfARemovedMember(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	bobs := e.subscribe(bob, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	_, m := e.pushTo(bobs.Endpoint, "Bob's", 30*time.Second)
	if err := e.st.RemoveMember(t.Context(), e.project.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	code, text := e.answerWithToken(m, "choice:1")
	t.Logf("a removed member's token: %d %q", code, text)
	if code != http.StatusForbidden || !strings.Contains(text, "may not answer") {
		t.Errorf("a removed member's token: %d %q, want 403 saying he may not answer", code, text)
	}
	if s := e.askStatus(in.ID); s != "pending" {
		t.Errorf("the ask is %s after a removed member's token, want pending", s)
	}
}

// TestReachTokenOfAnArchivedSession: the session is archived while its
// ask waits (another replica's archive, before the process stopped). The
// phone's token is refused with the archive's sentence; the ask stays
// pending.
func TestReachTokenOfAnArchivedSession(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 0 })
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	_, m := e.nextPush(30 * time.Second)
	if err := e.st.ArchiveSession(t.Context(), sess.ID, true); err != nil {
		t.Fatal(err)
	}
	code, text := e.answerWithToken(m, "choice:1")
	t.Logf("a token of an archived session's ask: %d %q", code, text)
	if code != http.StatusConflict || !strings.Contains(text, "archived") {
		t.Errorf("token of an archived session's ask: %d %q, want 409 saying it is archived", code, text)
	}
	if s := e.askStatus(in.ID); s != "pending" {
		t.Errorf("the ask is %s, want pending", s)
	}
}

// TestPushEndpointOfAnotherPerson: Mallory learns the endpoint URL of
// Bob's phone and registers it with keys of her own. Bob's device must
// stay Bob's, with his keys: before, ON CONFLICT moved it to her
// silently, so Bob's asks no longer reached his phone and hers went to
// it encrypted to keys it cannot read. The same browser (same endpoint
// and keys) signed in as another person still moves, as a browser does
// that re-subscribes with the subscription it has.
func TestPushEndpointOfAnotherPerson(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	bob := e.member("bob@example.com", "Bob", roleMember)
	mallory := e.member("mallory@example.com", "Mallory", roleMember)
	bobs := e.subscribe(bob, "phone")
	hers := e.reach.push.Subscribe()
	body := func(endpoint, p256dh, auth string) string {
		b, _ := json.Marshal(map[string]any{"endpoint": endpoint, "keys": map[string]string{"p256dh": p256dh, "auth": auth}, "name": "mine now"})
		return string(b)
	}
	res, text := e.jsonAs(mallory, http.MethodPost, "/push/subscriptions", body(bobs.Endpoint, hers.P256dh, hers.Auth))
	t.Logf("Bob's endpoint with Mallory's keys: %s %s", res.Status, text)
	if res.StatusCode == http.StatusCreated {
		t.Errorf("Mallory registered Bob's endpoint with her keys: %s %s, want a refusal", res.Status, text)
	}
	ds, _ := e.st.PushDevices(t.Context(), bob.ID)
	if len(ds) != 1 || ds[0].Endpoint != bobs.Endpoint || ds[0].P256dh != bobs.P256dh || ds[0].Auth != bobs.Auth || ds[0].Name != "phone" {
		t.Fatalf("Bob's devices after Mallory's attempt: %+v, want his phone unchanged", ds)
	}
	if mine, _ := e.st.PushDevices(t.Context(), mallory.ID); len(mine) != 0 {
		t.Errorf("Mallory has %d devices, want none", len(mine))
	}
	// The same browser, now signed in as Mallory: its own subscription moves.
	if res, text := e.jsonAs(mallory, http.MethodPost, "/push/subscriptions", body(bobs.Endpoint, bobs.P256dh, bobs.Auth)); res.StatusCode != http.StatusCreated {
		t.Errorf("the same browser's subscription, signed in as another person: %s %s, want 201", res.Status, text)
	}
	if mine, _ := e.st.PushDevices(t.Context(), mallory.ID); len(mine) != 1 {
		t.Errorf("Mallory has %d devices after re-subscribing the same browser, want 1", len(mine))
	}
	// The device's owner (now Mallory) may renew its keys.
	if res, text := e.jsonAs(mallory, http.MethodPost, "/push/subscriptions", body(bobs.Endpoint, hers.P256dh, hers.Auth)); res.StatusCode != http.StatusCreated {
		t.Errorf("renewing one's own device's keys: %s %s, want 201", res.Status, text)
	}
}

// TestReachSlackReplay: the very request of a click that answered,
// replayed within Slack's five minutes, answers nothing more and the
// clicker is told who answered; a click sent to a project without Slack,
// or to no project, is refused before anything is read.
func TestReachSlackReplay(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) {
		pr.EscalateAfter, pr.SlackToken, pr.SlackSecret, pr.SlackChannel = 0, slackToken, slackSecret, "#parley"
	})
	e.reach.slack.AddUser("UYOU", "you@example.com")
	bare, err := e.st.CreateProject(t.Context(), "No Slack", 0)
	if err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	post := e.slackCall("chat.postMessage", 1, 30*time.Second)
	here := e.web.URL + "/slack/interactions/" + strconv.FormatInt(e.project.ID, 10)
	req := e.reach.slack.Click(t, here, slackSecret, "UYOU", in.ID, "choice:1", slacktest.ChannelID(post.Channel), post.TS, time.Now())
	body, _ := io.ReadAll(req.Body)
	send := func(url string) int {
		t.Helper()
		r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header = req.Header.Clone()
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, url := range []string{e.web.URL + "/slack/interactions/" + strconv.FormatInt(bare.ID, 10), e.web.URL + "/slack/interactions/x"} {
		if code := send(url); code != http.StatusNotFound {
			t.Errorf("a click sent to %s: %d, want 404", url, code)
		}
	}
	if s := e.askStatus(in.ID); s != "pending" {
		t.Fatalf("after clicks sent elsewhere the ask is %s", s)
	}
	if code := send(here); code != http.StatusOK {
		t.Fatalf("the click: %d", code)
	}
	w.waitFor(60*time.Second, "Green it is.")
	if code := send(here); code != http.StatusOK {
		t.Fatalf("the replayed click: %d, want 200 (the refusal goes to response_url)", code)
	}
	if told := e.slackCall("response_url", 1, 10*time.Second); !strings.Contains(told.Text, "Already answered by you") {
		t.Errorf("the replay was told %q, want already answered by you", told.Text)
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "answered" {
		t.Errorf("ask = %s, want answered once", got.Status)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2 (one answer)", n)
	}
}

// TestDeliveriesHideAddresses: the deliveries line on an ask's card is
// read by every member and viewer of the project; it names the person an
// ask was e-mailed to, as it names whose phone it was pushed to, and
// never shows their address (which only the project's owners see, on its
// settings page) nor a failure's detail.
func TestDeliveriesHideAddresses(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 0 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	vic := e.member("vic@example.com", "Vic", roleViewer)
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	for _, d := range []store.Delivery{
		{InputID: in.ID, UserID: &bob.ID, Channel: "email", Target: "bob@example.com", Outcome: "sent"},
		{InputID: in.ID, UserID: &bob.ID, Channel: "email", Target: "bob@example.com", Outcome: "failed", Detail: "550 bob@example.com: no such mailbox"},
		{InputID: in.ID, UserID: &bob.ID, Channel: "push", Target: "Bob's phone", Outcome: "failed", Detail: "POST https://push.example.com/secret-endpoint: 500"},
	} {
		if err := e.st.AddDelivery(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []*testUser{vic, bob} {
		page := e.getAs(u, "/inbox")
		if !strings.Contains(page, `id="ask-`+in.ID+`-reach"`) {
			t.Logf("%s's inbox shows no card of the ask", u.Name)
			continue
		}
		for _, leak := range []string{"bob@example.com", "secret-endpoint", "no such mailbox"} {
			if strings.Contains(page, leak) && !(u == bob && leak == "bob@example.com") { // his own page shows his address
				t.Errorf("%s's inbox shows %q", u.Name, leak)
			}
		}
		if !strings.Contains(page, "e-mailed Bob") || !strings.Contains(page, "could not e-mail Bob") {
			t.Errorf("%s's inbox does not say the ask was e-mailed to Bob", u.Name)
		}
	}
	lines := e.srv.deliveriesOf(t.Context(), []string{in.ID})[in.ID]
	var texts []string
	for _, l := range lines {
		texts = append(texts, l.Text)
	}
	if got := strings.Join(texts, " · "); !strings.Contains(got, "e-mailed Bob · could not e-mail Bob · could not reach Bob's phone") || strings.Contains(got, "@") {
		t.Errorf("the card's deliveries = %q, want Bob named and no address", got)
	}
}

// TestPushOfAHugeAsk: the model asks a 200 KB question whose two options
// are 4,000 characters each. The push still leaves (its texts cut to fit
// a push), its actions answer, and the model gets the whole option it
// wrote. Before reach/connect's payloadOf was fixed, no push left: it
// looped for ever shortening a body of "…".
func TestPushOfAHugeAsk(t *testing.T) {
	blue, green := "Blue "+strings.Repeat("b", 4000), "Green "+strings.Repeat("g", 4000)
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: map[string]any{"question": strings.Repeat("Which? ", 200<<10/7),
			"options": []map[string]string{{"label": blue}, {"label": green}}}},
		{Text: "Noted."},
	}, envOptions{reach: true, quiet: true})
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	e.pendingAsk(sess.ID)
	p, m := e.nextPush(60 * time.Second)
	if len(p.Payload) > 3000 || len(m.Actions) != 2 || !strings.HasPrefix(m.Actions[1].Title, "Green ") || m.Token == "" {
		t.Fatalf("push of %d bytes: %+v, want the ask's two actions and a token within a push", len(p.Payload), m)
	}
	if code, text := e.answerWithToken(m, "choice:1"); code != http.StatusOK {
		t.Fatalf("answer from the notification: %d %q", code, text)
	}
	w.waitFor(60*time.Second, "Noted.")
	if got, _ := e.lastToolResult(2); !strings.Contains(got, green) {
		t.Errorf("the model got %.200q…, want the whole option it wrote", got)
	}
}

// TestPushDevicesPerPerson: a member cannot register endpoint after
// endpoint (each one a URL Parley then posts to at every ask, so a
// thousand of them would turn each ask into a thousand requests to
// hosts of their choosing): past reachweb.MaxDevices the API refuses and
// says what to do, while re-registering a device one has still works.
func TestPushDevicesPerPerson(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	const keys = `"keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}`
	add := func(i int) (*http.Response, string) {
		return e.jsonAs(e.user, http.MethodPost, "/push/subscriptions", `{"endpoint":"https://push.example.com/d`+strconv.Itoa(i)+`",`+keys+`}`)
	}
	var refusedAt int
	for i := range 60 {
		if res, text := add(i); res.StatusCode != http.StatusCreated {
			refusedAt = i
			t.Logf("device %d: %s %s", i, res.Status, text)
			if res.StatusCode != http.StatusConflict || !strings.Contains(text, "Remove one") {
				t.Errorf("device %d: %s %s, want 409 saying to remove one", i, res.Status, text)
			}
			break
		}
	}
	if refusedAt == 0 || refusedAt > 20 {
		t.Fatalf("refused at device %d, want at most 20 devices", refusedAt)
	}
	if res, text := add(0); res.StatusCode != http.StatusCreated {
		t.Errorf("re-registering a device one has: %s %s, want 201", res.Status, text)
	}
	if ds, _ := e.st.PushDevices(t.Context(), e.user.ID); len(ds) != refusedAt {
		t.Errorf("%d devices stored, want %d", len(ds), refusedAt)
	}
}
