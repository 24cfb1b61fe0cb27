package runstore

import (
	"math"
	"testing"

	"parley/gateway"
	"parley/store"
)

// TestUsageSinkRules: the gateway's rules for a session are its runs'
// model (the project's pin, or the session's own an owner chose) and
// what is left under the project's limits, with the sentence prompt uses
// once a limit is reached; a charge counts toward them.
func TestUsageSinkRules(t *testing.T) {
	st := open(t)
	ctx := t.Context()
	project, err := st.EnsureDefaultProject(ctx, "default", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	settings := project.ProjectSettings
	settings.Model = "claude-sonnet-4-5"
	if err := st.UpdateProjectSettings(ctx, project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	sink := NewUsageSink(st)
	plain, own := newSession(t, st, project), newSession(t, st, project)
	if err := st.SetSessionOptions(ctx, own.ID, store.SessionOptions{Model: "opus"}); err != nil {
		t.Fatal(err)
	}
	rules := func(s store.Session) gateway.Rules {
		t.Helper()
		r, err := sink.Rules(ctx, project.ID, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := rules(plain); r != (gateway.Rules{Model: "claude-sonnet-4-5", SessionLeftUSD: -1, ProjectLeftUSD: -1}) {
		t.Errorf("no limits: %+v", r)
	}
	if r := rules(own); r.Model != "opus" {
		t.Errorf("a session with its own model: %+v", r)
	}
	if err := st.SetProjectLimits(ctx, project.ID, store.ProjectLimits{SessionBudgetUSD: 1, DailyBudgetUSD: 3}); err != nil {
		t.Fatal(err)
	}
	if err := sink.AddUsage(ctx, project.ID, gateway.Usage{Requests: 1, SessionID: plain.ID, CostUSD: 0.25}); err != nil {
		t.Fatal(err)
	}
	if r := rules(plain); math.Abs(r.SessionLeftUSD-0.75) > 1e-9 || math.Abs(r.ProjectLeftUSD-2.75) > 1e-9 || r.Reached != "" {
		t.Errorf("after $0.25: %+v; want 0.75 and 2.75 left", r)
	}
	if err := sink.AddUsage(ctx, project.ID, gateway.Usage{Requests: 1, SessionID: plain.ID, CostUSD: 1}); err != nil {
		t.Fatal(err)
	}
	want := "This session has spent $1.25, its limit is $1.00. An owner can raise the limit in the project's settings."
	if r := rules(plain); r.Reached != want || r.SessionLeftUSD != 0 {
		t.Errorf("over the session's limit: %+v; want %q", r, want)
	}
	if r := rules(own); r.Reached != "" || math.Abs(r.ProjectLeftUSD-1.75) > 1e-9 {
		t.Errorf("another session: %+v; want 1.75 left today", r)
	}
}
