package server

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/reach/slack/slacktest"
	"parley/runner/fakeapi"
	"parley/store"
)

// reachForm is a full "Reaching people" form with the given changes.
func reachFormWith(kv ...string) url.Values {
	f := url.Values{"first_reach": {"starter"}, "escalate_after": {"2"}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// saveReach posts the form as u and returns the status and the page (a
// redirect is followed by reading the settings page).
func (e *env) saveReach(u *testUser, form url.Values) (int, string) {
	e.t.Helper()
	res := e.postAs(u, fmt.Sprintf("/projects/%d/settings/reach", e.project.ID), form)
	if res.StatusCode == http.StatusSeeOther {
		return res.StatusCode, e.getAs(u, res.Header.Get("Location"))
	}
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, b.String()
}

func (e *env) projectReach() store.ProjectReach {
	e.t.Helper()
	pr, err := e.st.ProjectReachOf(e.t.Context(), e.project.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return pr
}

// TestReachSettingsSave: an owner saves each field of "Reaching people"
// and the store has it; the Slack token is tried against Slack's
// auth.test (the fake), and the webhook gets a secret Parley made, shown
// once; an empty secret field keeps the stored one; Disconnect clears it.
func TestReachSettingsSave(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	owner := e.member("owner@example.com", "Olive", roleOwner)
	page := e.getAs(owner, fmt.Sprintf("/projects/%d/settings", e.project.ID))
	if want := e.web.URL + fmt.Sprintf("/slack/interactions/%d", e.project.ID); !strings.Contains(page, want) {
		t.Errorf("the settings page does not show the Slack Request URL %s", want)
	}
	if !strings.Contains(page, `value="starter" checked`) || !strings.Contains(page, `name="escalate_after" min="0" max="1440" value="2"`) {
		t.Errorf("the defaults (starter, 2 minutes) are not shown:\n%s", sectionOf(page))
	}

	code, page := e.saveReach(owner, reachFormWith("first_reach", "named", "named", fmt.Sprint(e.user.ID), "escalate_after", "15",
		"slack_token", slackToken, "slack_secret", slackSecret, "slack_channel", "#ops"))
	if code != http.StatusSeeOther || !strings.Contains(page, "Reach settings saved.") {
		t.Fatalf("save: %d\n%s", code, sectionOf(page))
	}
	want := store.ProjectReach{FirstReach: "named", Named: []int64{e.user.ID}, EscalateAfter: 900,
		SlackToken: slackToken, SlackSecret: slackSecret, SlackChannel: "#ops", WebhookURL: "", WebhookSecret: ""}
	if diff := cmp.Diff(want, e.projectReach()); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(e.reach.slack.Calls(), func(c slacktest.Call) bool { return c.Method == "auth.test" && c.Error == "" }) {
		t.Error("the token was not tried with auth.test")
	}

	hook := "https://127.0.0.1:9/hook"
	code, page = e.saveReach(owner, reachFormWith("first_reach", "all", "escalate_after", "0", "slack_channel", "C0123456789", "webhook_url", hook))
	if code != http.StatusOK {
		t.Fatalf("save with a new webhook: %d, want 200 (the page shows the new secret)\n%s", code, sectionOf(page))
	}
	pr := e.projectReach()
	if pr.FirstReach != "all" || len(pr.Named) != 0 || pr.EscalateAfter != 0 || pr.WebhookURL != hook || len(pr.WebhookSecret) != 64 {
		t.Errorf("stored %+v, want all, never, the webhook and a 64-hex secret", pr)
	}
	if pr.SlackToken != slackToken || pr.SlackSecret != slackSecret || pr.SlackChannel != "C0123456789" {
		t.Errorf("empty secret fields did not keep the stored Slack app: %+v", pr)
	}
	if !strings.Contains(page, pr.WebhookSecret) {
		t.Error("the new webhook secret is not shown right after it was made")
	}
	secret := pr.WebhookSecret
	if later := e.getAs(owner, fmt.Sprintf("/projects/%d/settings", e.project.ID)); strings.Contains(later, secret) {
		t.Error("the webhook secret is shown again on a later visit")
	}
	if code, _ = e.saveReach(owner, reachFormWith("webhook_url", hook, "slack_channel", "#ops")); code != http.StatusSeeOther || e.projectReach().WebhookSecret != secret {
		t.Errorf("saving again (%d) changed the webhook secret", code)
	}
	if code, _ = e.saveReach(owner, reachFormWith("webhook_url", hook, "slack_channel", "#ops", "webhook_regenerate", "1")); code != http.StatusOK || e.projectReach().WebhookSecret == secret {
		t.Errorf("Regenerate (%d) kept the old webhook secret", code)
	}

	if code, _ = e.saveReach(owner, reachFormWith("slack_disconnect", "1")); code != http.StatusSeeOther {
		t.Fatalf("disconnect: %d", code)
	}
	if pr := e.projectReach(); pr.SlackToken != "" || pr.SlackSecret != "" || pr.SlackChannel != "" {
		t.Errorf("Disconnect Slack left %+v", pr)
	}
}

// TestReachSettingsRefusals: a member who is not an owner cannot save,
// nor a form without the sign-in's CSRF token;
// a webhook Parley must not post to, a token Slack rejects, a named
// choice without people and an escalation out of range are refused with
// a sentence next to the field, and nothing is stored.
func TestReachSettingsRefusals(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	owner := e.member("owner@example.com", "Olive", roleOwner)
	viewer := e.member("viewer@example.com", "Vic", roleViewer)

	if code, _ := e.saveReach(e.user, reachFormWith("first_reach", "all")); code != http.StatusForbidden && code != http.StatusNotFound {
		t.Errorf("a member saved reach settings: %d", code)
	}
	forged := reachFormWith("first_reach", "all", csrfField, "forged")
	if res := e.postAs(owner, fmt.Sprintf("/projects/%d/settings/reach", e.project.ID), forged); res.StatusCode != http.StatusForbidden {
		t.Errorf("an owner's form with a forged CSRF token: %d, want 403", res.StatusCode)
	}
	if got := e.projectReach(); got.FirstReach != "starter" {
		t.Errorf("after a member's attempt and a forged form: %+v", got)
	}
	for _, c := range []struct {
		name string
		form url.Values
		want string
	}{
		{"plain http to a private address", reachFormWith("webhook_url", "http://10.0.0.1/x"), "The URL must use https"},
		{"https to a private address", reachFormWith("webhook_url", "https://10.0.0.1/x"), "10.0.0.1"},
		{"a token Slack rejects", reachFormWith("slack_token", "xoxb-not-the-token", "slack_secret", slackSecret, "slack_channel", "#ops"), "Slack did not accept this token"},
		{"not a bot token", reachFormWith("slack_token", "xoxp-user-token", "slack_secret", slackSecret, "slack_channel", "#ops"), "starts with xoxb-"},
		{"a token without a signing secret", reachFormWith("slack_token", slackToken, "slack_channel", "#ops"), "signing secret too"},
		{"named without people", reachFormWith("first_reach", "named"), "Tick at least one person"},
		{"a viewer named", reachFormWith("first_reach", "named", "named", fmt.Sprint(viewer.ID)), "not viewers"},
		{"escalation too late", reachFormWith("escalate_after", "1441"), "0 (never) to 1440"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, page := e.saveReach(owner, c.form)
			if code != http.StatusBadRequest || !strings.Contains(page, c.want) {
				t.Errorf("%d, want 400 with %q:\n%s", code, c.want, sectionOf(page))
			}
			if diff := cmp.Diff(store.DefaultProjectReach, e.projectReach()); diff != "" {
				t.Errorf("stored anyway (-want +got):\n%s", diff)
			}
			if strings.Contains(page, "xoxb-not-the-token") || strings.Contains(page, slackSecret) {
				t.Error("the refused page echoes a typed secret")
			}
		})
	}
}

// TestReachSettingsHideSecrets: once a Slack app and a webhook are
// connected, neither the bot token, the signing secret nor the webhook
// secret is anywhere in the settings page's HTML; the page says they are
// set.
func TestReachSettingsHideSecrets(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	owner := e.member("owner@example.com", "Olive", roleOwner)
	token := "xoxb-1234567890-abcdefghijklmnop"
	if err := e.st.SetProjectReach(t.Context(), e.project.ID, store.ProjectReach{FirstReach: "starter", EscalateAfter: 120,
		SlackToken: token, SlackSecret: slackSecret, SlackChannel: "#ops", WebhookURL: "https://hooks.example.com/x",
		WebhookSecret: "0123456789abcdef0123456789abcdef"}); err != nil {
		t.Fatal(err)
	}
	page := e.getAs(owner, fmt.Sprintf("/projects/%d/settings", e.project.ID))
	for _, secret := range []string{token, slackSecret, "0123456789abcdef0123456789abcdef"} {
		if strings.Contains(page, secret) {
			t.Errorf("the settings page shows the secret %q", secret)
		}
	}
	for _, want := range []string{"Set (ends …mnop)", "Set (ends …85a5)", "Set (ends …cdef)", "Disconnect Slack", `value="#ops"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, sectionOf(page))
		}
	}
}

var reachSection = regexp.MustCompile(`(?s)<h2 id="reach">.*?</form>`)

// sectionOf is the "Reaching people" section of a settings page, for
// failure messages.
func sectionOf(page string) string {
	if s := reachSection.FindString(page); s != "" {
		return s
	}
	return page
}
