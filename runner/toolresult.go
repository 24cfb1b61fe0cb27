package runner

import (
	"strings"

	"parley/streamjson"
)

// askAborted opens the error result the CLI writes for a call whose
// permission request (can_use_tool: a permission, a plan, an
// AskUserQuestion) it still waited on when it was ended: "Tool permission
// request failed: AbortError…" (measured on 2.1.328).
const askAborted = "Tool permission request failed"

// AnswerTaken reports whether result, the tool_result of the call an ask
// of source belongs to, means Claude took the ask's answer. It is the one
// rule of the delivery check (the run's confirmDeliveries, and
// transcriptHasResult for an answer owed) and of the reconcile of a lost
// run (package transcript), so that the two never disagree on whether a
// turn still waits for an answer:
//   - a result that is no error: taken;
//   - an error of ask_user: the relay broke on the way, and the model read
//     an error instead of the answer: not taken, it is owed;
//   - the CLI's own error for a call whose permission request it was still
//     waiting on when it was ended: no answer reached it and the call
//     never ran: not taken;
//   - any other error (the allowed tool ran and failed, or was cut off as
//     the process ended: "Exit code 137"): taken. The model holds the
//     call's result, and its turn goes on from there.
func AnswerTaken(source string, result streamjson.ContentBlock) bool {
	switch {
	case !result.IsError:
		return true
	case source == SourceAskUser:
		return false
	}
	return !strings.HasPrefix(strings.TrimSpace(result.ResultText()), askAborted)
}
