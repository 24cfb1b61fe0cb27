package runner

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"parley/askuser"
)

// TestOwedAnswerText: an allowed call handed to a process that ended
// before its result may have run, and the model is told so with what
// Parley saw, never that it did not run. A refused call did not run, and
// says so.
func TestOwedAnswerText(t *testing.T) {
	p := AskPayload{Kind: KindPermission, ToolName: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`)}
	edited := "make deploy-staging"
	started := time.Date(2026, 11, 27, 3, 1, 30, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		status    askuser.Status
		resp      Response
		facts     CallFacts
		want, not []string
	}{
		{"allowed, seen running", askuser.StatusAnswered, Response{By: "ann"}, CallFacts{StartedAt: started, RanFor: 60},
			[]string{"ann allowed it", "the call started at 03:01:30 UTC", "still running 60 seconds after it started", "may have run", "its result is unknown"},
			[]string{"did not run", "Run it again"}},
		{"allowed, nothing seen", askuser.StatusAnswered, Response{By: "ann"}, CallFacts{},
			[]string{"saw no sign of the call starting, which does not mean it did not start", "may have run"},
			[]string{"did not run", "still running"}},
		{"allowed with an edited command", askuser.StatusAnswered, Response{By: "ann", Command: &edited}, CallFacts{StartedAt: started},
			[]string{"with the input changed to:\n> make deploy-staging", "may have run"}, []string{"did not run"}},
		{"denied", askuser.StatusDeclined, Response{By: "ann", Decline: true, Reason: "not today"}, CallFacts{},
			[]string{"so the call did not run", "not today"}, []string{"may have run"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := OwedAnswerText(p, tt.status, tt.resp, tt.facts)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("says %q:\n%s", n, got)
				}
			}
		})
	}
}
