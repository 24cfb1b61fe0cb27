package server

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"parley/runner/fakeapi"
	"parley/store"
)

// TestNewSessionRefusedOverDailyBudget spends a project's daily limit and
// then starts a session: it is refused with the limit's sentence, and no
// session row is made.
func TestNewSessionRefusedOverDailyBudget(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "never asked"}}, envOptions{quiet: true})
	ctx := t.Context()
	if err := e.st.SetProjectLimits(ctx, e.project.ID, store.ProjectLimits{DailyBudgetUSD: 5}); err != nil {
		t.Fatal(err)
	}
	// The gateway's charge for a session since deleted counts for its project.
	if err := e.st.ChargeModelUsage(ctx, e.project.ID, "00000000-0000-0000-0000-000000000000", 8); err != nil {
		t.Fatal(err)
	}
	res := e.postAs(e.user, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/sessions", url.Values{"text": {"hello"}})
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	want := "The project has spent $8.00 today, its daily limit is $5.00."
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), want) {
		t.Errorf("starting a session over the daily limit: %d, body has the sentence %v; want 403 and %q",
			res.StatusCode, strings.Contains(string(body), want), want)
	}
	sessions, err := e.st.ListSessions(ctx, e.project.ID)
	if err != nil || len(sessions) != 0 {
		t.Errorf("the refused start left %d sessions (%v); want none", len(sessions), err)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests; want none", n)
	}
}
