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

func TestBudgetLeft(t *testing.T) {
	for _, tt := range []struct {
		name    string
		l       store.ProjectLimits
		sp      store.Spending
		left    float64
		reached string
	}{
		{"no limits", store.ProjectLimits{}, store.Spending{SessionUSD: 5, TodayUSD: 50}, -1, ""},
		{"session is tighter", store.ProjectLimits{SessionBudgetUSD: 2, DailyBudgetUSD: 10}, store.Spending{SessionUSD: 1.5, TodayUSD: 3}, 0.5, ""},
		{"day is tighter", store.ProjectLimits{SessionBudgetUSD: 2, DailyBudgetUSD: 10}, store.Spending{SessionUSD: 0.5, TodayUSD: 9.75}, 0.25, ""},
		{"session reached", store.ProjectLimits{SessionBudgetUSD: 2}, store.Spending{SessionUSD: 2}, 0, "This session has spent $2.00, its limit is $2.00."},
		{"day reached", store.ProjectLimits{DailyBudgetUSD: 1}, store.Spending{TodayUSD: 1.2}, 0, "The project has spent $1.20 today, its daily limit is $1.00."},
	} {
		left, reached := budgetLeft(tt.l, tt.sp)
		if left != tt.left || reached != tt.reached {
			t.Errorf("%s: budgetLeft = %v, %q; want %v, %q", tt.name, left, reached, tt.left, tt.reached)
		}
	}
}
