package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/runner"
	"parley/runner/fakeapi"
	"parley/store"
)

// curlGateway is a Bash command that asks the gateway for model with
// max_tokens 64000 using the run's own token, as a member's Claude may,
// and prints the answer and its HTTP status.
func curlGateway(model string) string {
	return curlBody(`{"model":"` + model + `","max_tokens":64000,"messages":[{"role":"user","content":"gateway attack"}]}`)
}

func curlBody(body string) string {
	return `curl -sS -w ' HTTP%{http_code}\n' -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' ` +
		`-H 'anthropic-version: 2023-06-01' -d '` + body + `' "$ANTHROPIC_BASE_URL/v1/messages"`
}

// TestAttackGatewayMoneyAndModel plays attack 7's money-and-model part
// (issue 27) through the real CLI, with per-project uids and run-guard as
// serve runs it. The owner pinned claude-sonnet-4-5. The member's Claude
// runs curl against the gateway with the run's token: a model outside the
// pin is refused (403, naming the allowed models), max_tokens 64000 reaches
// the model lowered to 32000, and once a $0.01 session budget is spent
// twenty requests at once all get 429 saying which limit is reached and
// none reaches the model. Then `/model opus` typed in the page is refused
// by the server; switched on the live CLI anyway, its next request is
// refused by the gateway.
func TestAttackGatewayMoneyAndModel(t *testing.T) {
	const pin = "claude-sonnet-4-5"
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": curlGateway("claude-opus-4-1") + "; " + curlGateway(pin)}},
		{Text: "OUT " + fakeapi.ToolResultPlaceholder},
		// One curl spends past the budget, unseen by the CLI: a request
		// with tools is a main request to the fake model, answered by the
		// next step with 10,000 input tokens of claude-sonnet-4-5 ($0.03).
		// Then twenty at once.
		{ToolName: "Bash", ToolInput: map[string]any{
			"command": curlBody(`{"model":"`+pin+`","max_tokens":64000,"tools":[{"name":"t","input_schema":{"type":"object"}}],`+
				`"messages":[{"role":"user","content":"paid attack"}]}`) + " > gw-paid.txt 2>&1; " +
				"for i in $(seq 20); do " + curlGateway(pin) + " >> gw-budget.txt 2>&1 & done; wait"}},
		{Text: "paid", InputTokens: 10000},
		{Text: "OUT2 " + fakeapi.ToolResultPlaceholder},
		{Text: "Opus answered."},
	}
	e := newEnv(t, sc, envOptions{quiet: true, isolation: "uid", guard: true})
	ctx := t.Context()
	settings := e.project.ProjectSettings
	settings.Model, settings.AllowedTools = pin, []string{"Bash"}
	if err := e.st.UpdateProjectSettings(ctx, e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}

	// A disallowed model, and max_tokens 64000.
	s1 := e.newSession()
	w1 := e.dial(s1.ID, 0)
	w1.prompt("attack: another model, and more tokens")
	w1.waitFor(90*time.Second, "OUT ", "Done ·")
	out, _ := e.lastToolResult(2)
	t.Logf("curl of two models:\n%s", out)
	if !strings.Contains(out, "HTTP403") || !strings.Contains(out, `Model \"claude-opus-4-1\" is not allowed in this session; it may use claude-sonnet-4-5 and the Haiku models`) {
		t.Errorf("claude-opus-4-1 was not refused naming the allowed models: %s", out)
	}
	if strings.Count(out, "HTTP403") != 1 || strings.Count(out, "HTTP200") != 1 {
		t.Errorf("the pinned model was not answered: %s", out)
	}
	side := sideRequestsOf(e, "gateway attack")
	for _, r := range side {
		if r.Model != pin {
			t.Errorf("a request for %s reached the model", r.Model)
		}
	}
	if len(side) != 1 || maxTokensOf(side[0]) != 32000 {
		t.Errorf("the model got %d curl requests (want 1), max_tokens %v (want 32000)", len(side), maxTokensOf(side...))
	}
	e.healthy()

	// Over a $0.01 session budget: 429 with the reason, for Bash's curl.
	lim := store.ProjectLimits{SessionBudgetUSD: 0.01}
	if err := e.st.SetProjectLimits(ctx, e.project.ID, lim); err != nil {
		t.Fatal(err)
	}
	s2 := e.newSession()
	w2 := e.dial(s2.ID, 0)
	w2.prompt("attack: spend past the budget")
	waitAny(t, w2, 90*time.Second, "its limit is $0.01", "OUT2")
	budget := waitFile(t, filepath.Join(WorkspaceDir(e.dataDir, e.project), "gw-budget.txt"), 20)
	paid, _ := os.ReadFile(filepath.Join(WorkspaceDir(e.dataDir, e.project), "gw-paid.txt"))
	t.Logf("curl that spent past the budget:\n%s\ncurl over the budget:\n%s", paid, budget)
	if n := strings.Count(budget, "HTTP429"); n != 20 {
		t.Errorf("%d of 20 requests over the budget got 429", n)
	}
	if n := strings.Count(budget, "This session has spent $0.03, its limit is $0.01."); n != 20 {
		t.Errorf("%d of 20 refusals say which limit is reached", n)
	}
	if n := len(sideRequestsOf(e, "gateway attack")); n != 1 {
		t.Errorf("%d curl requests reached the model in all, want the 1 before the budget", n)
	}
	if sp, err := e.st.Spending(ctx, s2.ID); err != nil || sp.SessionUSD < 0.03 || sp.SessionUSD > 0.031 {
		t.Errorf("session spending = %+v, %v; want the gateway's charge, $0.030075", sp, err)
	}
	e.healthy()

	// `/model opus` in the page: the server refuses it (a typed /model is a
	// checked switch, modeswitch.go). Made on the live run anyway, as a
	// CLI's own /model would be, its next request is refused.
	if err := e.st.SetProjectLimits(ctx, e.project.ID, store.ProjectLimits{}); err != nil {
		t.Fatal(err)
	}
	w1.prompt("/model opus")
	w1.waitFor(30*time.Second, "is not allowed in this session")
	if err := e.sup.Switch(ctx, e.project.ID, s1.ID, runner.Switch{What: runner.SwitchModel, To: "opus", By: "a forged switch"}); err != nil {
		t.Fatalf("switch the live run directly: %v", err)
	}
	w1.prompt("answer as opus")
	page := waitAny(t, w1, 90*time.Second, "is not allowed in this session", "Opus answered.", "OUT2")
	if !strings.Contains(page, "is not allowed in this session") {
		t.Errorf("after /model opus the page shows no refusal")
	}
	for _, r := range append(e.fake.Requests(), e.fake.SideRequests()...) {
		if strings.Contains(r.Model, "opus") {
			t.Errorf("a request for %s reached the model after /model opus", r.Model)
		}
	}
	e.healthy()
}

// sideRequestsOf returns the fake model's side requests whose text holds s.
func sideRequestsOf(e *env, s string) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range e.fake.SideRequests() {
		if strings.Contains(string(r.Raw), s) {
			out = append(out, r)
		}
	}
	return out
}

// maxTokensOf is the max_tokens of the first request, or -1.
func maxTokensOf(rs ...fakeapi.Request) float64 {
	if len(rs) == 0 {
		return -1
	}
	var v struct {
		MaxTokens float64 `json:"max_tokens"`
	}
	json.Unmarshal(rs[0].Raw, &v)
	return v.MaxTokens
}

// waitFile waits until path holds at least n lines and returns it.
func waitFile(t *testing.T, path string, n int) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), "HTTP") >= n || time.Now().After(deadline) {
			return string(b)
		}
	}
}

// waitAny reads frames until one of subs shows; it returns what was read.
func waitAny(t *testing.T, w *ws, timeout time.Duration, subs ...string) string {
	t.Helper()
	var seen strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				t.Fatalf("websocket closed while waiting for %q; got:\n%s", subs, seen.String())
			}
			seen.WriteString(f)
			for _, s := range subs {
				if strings.Contains(seen.String(), s) {
					return seen.String()
				}
			}
		case <-deadline:
			t.Fatalf("timed out waiting for any of %q; got:\n%s", subs, seen.String())
		}
	}
}
