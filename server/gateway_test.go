package server

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"parley/gateway"
	"parley/runner/fakeapi"
)

// TestGatewayCarriesModelTraffic: the real CLI reaches the model only
// through Parley's gateway, which sends the real key upstream and counts the
// project's usage.
func TestGatewayCarriesModelTraffic(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Through the gateway."}}, envOptions{quiet: true})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "Through the gateway.", "Done ·")
	reqs := append(e.fake.Requests(), e.fake.SideRequests()...)
	if len(reqs) == 0 {
		t.Fatal("no request reached the model")
	}
	for _, r := range reqs {
		if k := r.Header.Get("X-Api-Key"); k != upstreamKey {
			t.Errorf("the model got x-api-key %q, want the server's key", k)
		}
	}
	// Usage is recorded when each response ends, just after the CLI has it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		u, err := e.st.ProjectUsage(ctx, e.project.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if u.Requests >= int64(len(reqs)) && u.InputTokens >= 10*int64(len(reqs)) && u.OutputTokens > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("usage = %+v after %d requests", u, len(reqs))
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The owner sees it on the settings page.
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	page := e.getAs(owner, "/projects/"+strconv.FormatInt(e.project.ID, 10)+"/settings")
	m := regexp.MustCompile(`Model use in the last 30 days: (\d+) requests, (\d+) input`).FindStringSubmatch(page)
	if m == nil || m[1] == "0" || m[2] == "0" {
		t.Errorf("the settings page shows no model use: %v", m)
	}
}

// TestGatewayLimitShownInPage: a project over its requests a minute gets
// no model reply, and the page says why.
func TestGatewayLimitShownInPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Never seen."}, {Text: "Never seen either."}},
		envOptions{quiet: true, gateway: gateway.Config{ProjectRPM: 1}})
	s := e.newSession()
	w := e.dial(s.ID, 0)
	w.prompt("hello")
	w.waitFor(60*time.Second, "Never seen.", "Done ·")
	w.prompt("again")
	got := w.waitFor(60*time.Second, "This project has reached its limit of 1 model requests a minute", "status-error")
	t.Log(got)
	if n := len(e.fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1 (the second was over the limit)", n)
	}
}
