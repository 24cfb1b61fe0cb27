package server

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/runner/fakeapi"
	"parley/store"
)

func TestSettingsSaveLimits(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Owner", roleOwner)
	path := "/projects/" + strconv.FormatInt(e.project.ID, 10) + "/settings"
	form := url.Values{"permission_mode": {"default"}, "session_budget": {"2.5"}, "daily_budget": {"x"}, "stall_timeout": {"5"}}
	if resp := e.postAs(owner, path, form); resp.StatusCode != 400 {
		t.Fatalf("bad limits: status %d; want 400", resp.StatusCode)
	}
	if l, _ := e.st.ProjectLimits(t.Context(), e.project.ID); l != (store.ProjectLimits{}) {
		t.Errorf("refused limits were stored: %+v", l)
	}
	form.Set("daily_budget", "10")
	form.Set("stall_timeout", "120")
	if resp := e.postAs(owner, path, form); resp.StatusCode != 303 {
		t.Fatalf("good limits: status %d; want 303", resp.StatusCode)
	}
	l, err := e.st.ProjectLimits(t.Context(), e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.ProjectLimits{SessionBudgetUSD: 2.5, DailyBudgetUSD: 10, StallSeconds: 120}, l); diff != "" {
		t.Errorf("stored limits (-want +got):\n%s", diff)
	}
	body := e.getAs(owner, path)
	for _, want := range []string{`id="session_budget" name="session_budget" min="0" step="0.01" value="2.5"`, `value="120"`} {
		if !strings.Contains(body, want) {
			t.Errorf("settings page lacks %s", want)
		}
	}
}
