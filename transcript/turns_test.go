package transcript

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/runner"
	"parley/streamjson"
)

// answerRuleCases are tool results of an ask's call, as the CLI writes
// them (2.1.328): whether each took the ask's answer is runner.AnswerTaken's
// to say, for the reconcile as for the delivery check.
var answerRuleCases = []struct {
	name    string
	source  string
	content string
	isError bool
	taken   bool
}{
	{"allowed command's result", "", "deployed", false, true},
	{"allowed command failed", "", "Exit code 1\nno such host", true, true},
	{"allowed command cut off with its process", "", "Exit code 137", true, true},
	{"permission request the CLI abandoned", "", "Tool permission request failed: AbortError: The operation was aborted", true, false},
	{"ask_user answer", runner.SourceAskUser, "User selected: Blue", false, true},
	{"ask_user relay broke", runner.SourceAskUser, "ask_user could not reach the user", true, false},
}

// TestTurnsFollowTheAnswerRule: a lost run's turn waits for an ask's
// answer exactly when runner.AnswerTaken says its call's result took
// none. Before the rule was shared, the turn waited on every error result,
// while the delivery check counted a permission's error as delivered: a
// crash during an allowed command dropped the turn silently.
func TestTurnsFollowTheAnswerRule(t *testing.T) {
	for _, tt := range answerRuleCases {
		t.Run(tt.name, func(t *testing.T) {
			result := streamjson.ContentBlock{Type: "tool_result", ToolUseID: "toolu_1", IsError: tt.isError, Content: mustJSON(tt.content)}
			if got := runner.AnswerTaken(tt.source, result); got != tt.taken {
				t.Fatalf("AnswerTaken = %v, want %v", got, tt.taken)
			}
			var tr turns
			tr.follow(runner.TypePrompt, mustJSON(map[string]any{"text": "deploy it", "by": "ann", "by_id": 1}), false)
			tr.follow("system", mustJSON(map[string]any{"subtype": "init"}), false)
			tr.follow("assistant", mustJSON(map[string]any{"message": map[string]any{"id": "msg_1", "stop_reason": "tool_use",
				"content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash"}}}}), false)
			tr.follow(runner.TypeInputRequested, mustJSON(map[string]any{"input_id": "in_1", "kind": "permission",
				"tool_use_id": "toolu_1", "tool_name": "Bash", "source": tt.source}), false)
			tr.follow(runner.TypeInputResolved, mustJSON(map[string]any{"input_id": "in_1", "status": "answered"}), false)
			tr.follow("user", mustJSON(map[string]any{"parley_recovered": true, "parent_tool_use_id": nil,
				"message": map[string]any{"role": "user", "content": []any{result}}}), true)
			turns, begun, stopped := tr.cut()
			if len(turns) != 1 || !begun {
				t.Fatalf("cut turns %v, begun %v; want the running turn", turns, begun)
			}
			if waits := stopped; waits == tt.taken {
				t.Errorf("the turn waits for the answer: %v, want %v (AnswerTaken %v)", waits, !tt.taken, tt.taken)
			}
			var want []string
			if tt.taken && tt.isError {
				want = []string{"Bash"} // an allowed call cut with the run: Claude is told
			}
			if diff := cmp.Diff(want, turns[0].CutCalls); diff != "" {
				t.Errorf("cut calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoOnSaysTheCallWasCutOff: the prompt that goes on after a crash cut
// an allowed call tells Claude so, and that the call may have run.
func TestGoOnSaysTheCallWasCutOff(t *testing.T) {
	w, ok := runner.GoOnAfterCrash([]runner.CutTurn{{Text: "deploy it", CutCalls: []string{"Bash"}}}, true, false)
	if !ok {
		t.Fatal("nothing goes on")
	}
	for _, want := range []string{"Go on where you left off.", "The call to Bash that was running then was cut off", "may have run"} {
		if !strings.Contains(w.Text, want) {
			t.Errorf("the prompt that goes on lacks %q:\n%s", want, w.Text)
		}
	}
}
