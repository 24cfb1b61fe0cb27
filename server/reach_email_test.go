package server

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/runner/fakeapi"
	"parley/store"
)

// TestReachEmail: a member who opted in to asks by e-mail gets the ask
// through a real SMTP server with a one-click link per answer. Following
// a link (as a mail scanner would, twice) shows a confirm page and answers
// nothing; its button (POST) answers once, the real CLI gives the model
// the answer, and every later POST, with either link, says it was already
// answered.
func TestReachEmail(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.EscalateAfter = 0 })
	if err := e.st.SetUserReach(t.Context(), e.user.ID, store.UserReach{TZ: "UTC", EmailAsks: true}); err != nil {
		t.Fatal(err)
	}
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)

	m := e.nextMail(30 * time.Second)
	if len(m.To) != 1 || m.To[0] != "you@example.com" || !strings.Contains(m.Subject, "Test project") ||
		!strings.Contains(m.Text, "Which colour?") {
		t.Fatalf("mail to %v %q:\n%s\nwant the ask to you", m.To, m.Subject, m.Text)
	}
	links := regexp.MustCompile(regexp.QuoteMeta(e.web.URL)+`/reach/a/([A-Za-z0-9_-]+)\?action=(choice%3A[01])`).FindAllStringSubmatch(m.Text, -1)
	if len(links) != 2 || links[0][1] != links[1][1] || links[1][2] != "choice%3A1" {
		t.Fatalf("links in the mail: %q, want Blue's and Green's with one token:\n%s", links, m.Text)
	}
	if !strings.Contains(m.Text, reach.AskURL(e.web.URL, sess.ID, in.ID)) {
		t.Errorf("the mail lacks the ask's link:\n%s", m.Text)
	}
	if !strings.Contains(m.HTML, links[1][0]) {
		t.Errorf("the HTML part lacks the link %s:\n%s", links[1][0], m.HTML)
	}
	blue, green, token := links[0][0], links[1][0], links[1][1]

	for range 2 {
		code, page := e.getPage(green)
		if code != http.StatusOK || !strings.Contains(page, "Answer this ask?") || !strings.Contains(page, "Green") ||
			!strings.Contains(page, `method="post"`) {
			t.Fatalf("GET %s: %d\n%s\nwant a confirm page", green, code, page)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if s := e.askStatus(in.ID); s != "pending" {
		t.Fatalf("after two GETs of the link the ask is %s, want pending", s)
	}

	confirm := e.web.URL + "/reach/a/" + token
	if code, page := e.postPage(confirm, "choice:1"); code != http.StatusOK || !strings.Contains(page, "Answered.") {
		t.Fatalf("POST the confirm page: %d\n%s", code, page)
	}
	w.waitFor(60*time.Second, "Green it is.")
	e.wantModelGot("User selected: Green")
	for _, action := range []string{"choice:1", "choice:0"} {
		if code, page := e.postPage(confirm, action); code == http.StatusOK || !spent(page) {
			t.Errorf("POST %s again: %d\n%s\nwant already answered or used", action, code, page)
		}
	}
	if _, page := e.getPage(blue); !spent(page) || strings.Contains(page, "<form") {
		t.Errorf("GET of the other link after the answer:\n%s\nwant already answered or used, no form", page)
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); !strings.Contains(string(got.Answer), `"e-mail"`) {
		t.Errorf("answer = %s, want via e-mail", got.Answer)
	}
	ds := e.waitDeliveries(in.ID, 0, func([]store.Delivery) bool { return true })
	if !hasDelivery(ds, "email", "sent", "you@example.com") {
		t.Errorf("deliveries: %s; want the e-mail sent", showDeliveries(ds))
	}
}

// TestReachEmailAtEscalation: nobody opted in to e-mail. Bob started the
// turn and has no push device, Carol has none either, you have a phone.
// Nothing is mailed at first; at the escalation (2 s) your phone is
// pushed and Bob and Carol, who have no device, get the ask by e-mail.
func TestReachEmailAtEscalation(t *testing.T) {
	e := newReachTestEnv(t, func(pr *store.ProjectReach) { pr.FirstReach, pr.EscalateAfter = "starter", 2 })
	bob := e.member("bob@example.com", "Bob", roleMember)
	e.member("carol@example.com", "Carol", roleMember)
	mine := e.subscribe(e.user, "phone")
	sess := e.newSession()
	e.dialAs(bob, sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	e.waitDeliveries(in.ID, 10*time.Second, func(ds []store.Delivery) bool {
		return hasDelivery(ds, "push", "no_device", "Bob")
	})

	var to []string
	for range 2 {
		m := e.nextMail(10 * time.Second)
		if after := time.Since(in.CreatedAt); after < 2*time.Second {
			t.Errorf("a mail to %v came %s after the ask opened, before the escalation", m.To, after)
		}
		if len(m.To) != 1 || !strings.Contains(m.Text, "Which colour?") || !strings.Contains(m.Text, "/reach/a/") {
			t.Errorf("mail to %v:\n%s\nwant the ask with its links", m.To, m.Text)
		}
		to = append(to, m.To...)
	}
	if !sameSet(to, []string{"bob@example.com", "carol@example.com"}) {
		t.Errorf("mailed %v, want Bob and Carol", to)
	}
	p, _ := e.pushTo(mine.Endpoint, "your", 10*time.Second)
	if p.At.Sub(in.CreatedAt) < 2*time.Second {
		t.Errorf("your phone was pushed %s after the ask opened, before the escalation", p.At.Sub(in.CreatedAt))
	}
	e.noMail(time.Second, "you have a device and did not opt in")
}

// spent says whether a confirm page says its ask was answered or its
// link used.
func spent(page string) bool {
	return strings.Contains(page, "Already answered by you") || strings.Contains(page, "was already used")
}

// getPage GETs u with no cookie, as a mail client's browser does.
func (e *env) getPage(u string) (int, string) {
	e.t.Helper()
	res, err := http.Get(u)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// postPage submits the confirm page's form, with no cookie.
func (e *env) postPage(u, action string) (int, string) {
	e.t.Helper()
	res, err := http.PostForm(u, url.Values{"action": {action}})
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestReachEmailOnlyOpensAComplexAsk: a question with three options has
// no one-click answer: the e-mail links to the ask on its page and has no
// answer links, and the phone's notification only opens it, with no token.
func TestReachEmailOnlyOpensAComplexAsk(t *testing.T) {
	three := map[string]any{"question": "Which colour?", "options": []map[string]string{{"label": "Blue"}, {"label": "Green"}, {"label": "Red"}}}
	e := newEnv(t, fakeapi.Scenario{{Text: "Let me ask.", ToolName: askTool, ToolInput: three}}, envOptions{reach: true, quiet: true})
	e.setReach(func(pr *store.ProjectReach) { pr.EscalateAfter = 0 })
	if err := e.st.SetUserReach(t.Context(), e.user.ID, store.UserReach{TZ: "UTC", EmailAsks: true}); err != nil {
		t.Fatal(err)
	}
	e.subscribe(e.user, "phone")
	sess := e.newSession()
	e.dial(sess.ID, 0).prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	m := e.nextMail(30 * time.Second)
	if !strings.Contains(m.Text, "Which colour?") || !strings.Contains(m.Text, reach.AskURL(e.web.URL, sess.ID, in.ID)) ||
		strings.Contains(m.Text, "/reach/a/") || strings.Contains(m.HTML, "/reach/a/") {
		t.Errorf("mail:\n%s\nwant the question and its page's link, no answer links", m.Text)
	}
	_, pm := e.nextPush(10 * time.Second)
	if pm.Token != "" || len(pm.Actions) != 1 || pm.Actions[0].ID != reach.ActOpen {
		t.Errorf("push = %s, want Open only and no token", asJSON(pm))
	}
}
