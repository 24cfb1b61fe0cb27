package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"parley/askuser"
	"parley/streamjson"
)

// CallFacts is what Parley saw of a call whose answer it handed to the
// process, which then ended before printing the call's result. Parley
// knows only that no result was printed, not that nothing ran.
type CallFacts struct {
	// StartedAt is when the CLI said it started the call (a system
	// task_started event naming its tool_use id); zero = not seen.
	StartedAt time.Time `json:"started_at,omitzero"`
	// RanFor is the longest elapsed time a tool_progress heartbeat of the
	// call reported (the CLI prints one every 30 s while a tool runs).
	RanFor int `json:"ran_for_seconds,omitempty"`
}

// CallLog is a DeliveryJournal that also reads back the facts a run
// recorded about the calls it left undelivered (input_undelivered events):
// the run that delivers the owed answers says what is known of them.
type CallLog interface {
	// UndeliveredEvents returns the payloads of the session's
	// input_undelivered events, oldest first.
	UndeliveredEvents(ctx context.Context, sessionID string) ([]json.RawMessage, error)
}

// noteCall reads a stdout line for signs that a handed-over call runs: the
// CLI prints {"type":"system","subtype":"task_started","tool_use_id":…}
// when it starts a Bash command, and {"type":"tool_progress",
// "parent_tool_use_id":…,"elapsed_time_seconds":30} every 30 s while a
// tool runs (measured on 2.1.328). It prints none of the command's output
// before the result.
func (r *Run) noteCall(l Line) {
	if len(r.awaiting) == 0 || (l.Type != "tool_progress" && l.Subtype != "task_started") {
		return
	}
	var started streamjson.System
	var progress streamjson.ToolProgress
	id := ""
	if l.Type == "tool_progress" && json.Unmarshal(l.Raw, &progress) == nil {
		id = progress.ParentToolUseID
	} else if l.Type != "tool_progress" && json.Unmarshal(l.Raw, &started) == nil {
		id = started.ToolUseID
	}
	h, ok := r.awaiting[id]
	if id == "" || !ok {
		return
	}
	if l.Type == "tool_progress" {
		h.facts.RanFor = max(h.facts.RanFor, progress.Elapsed)
	} else if h.facts.StartedAt.IsZero() {
		h.facts.StartedAt = time.Now().UTC()
	}
	r.awaiting[id] = h
}

// undeliveredFacts reads what the session's earlier runs recorded about
// the calls they left undelivered, by input id. A log that cannot be read
// gives none: the answer still goes, saying less.
func (r *Run) undeliveredFacts(ctx context.Context) map[string]CallFacts {
	cl, ok := r.journal.(CallLog)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	payloads, err := cl.UndeliveredEvents(ctx, r.spec.SessionID)
	if err != nil {
		r.log.Warn("read what is known of calls left undelivered", "err", err)
		return nil
	}
	out := map[string]CallFacts{}
	for _, raw := range payloads {
		var p struct {
			Calls map[string]CallFacts `json:"calls"`
		}
		if json.Unmarshal(raw, &p) == nil {
			for id, f := range p.Calls {
				out[id] = f
			}
		}
	}
	return out
}

// OwedAnswerText is the user turn that delivers an answer that was given
// to a Claude process which ended before the call's result came back. A
// call that was allowed may have run: the model is told so, with what
// Parley saw of it, and never that it did not run; it and the people
// decide whether to run it again. Other answers read as LateAnswerText's.
func OwedAnswerText(p AskPayload, status askuser.Status, resp Response, f CallFacts) string {
	if p.Kind != KindPermission || status == askuser.StatusDeclined {
		return LateAnswerText(p, status, resp)
	}
	var b strings.Builder
	b.WriteString("[Parley] Your session was interrupted: the Claude process ended after a call of yours was allowed and before its result came back. ")
	fmt.Fprintf(&b, "You asked for permission to use %s with this input:\n> %s\n\n", p.ToolName, clipText(string(p.Input), 2000))
	if resp.Input != nil || resp.Command != nil {
		changed := string(resp.Input)
		if resp.Command != nil {
			changed = *resp.Command
		}
		fmt.Fprintf(&b, "%s allowed it with the input changed to:\n> %s\n\n", orSomeone(resp.By), clipText(changed, 2000))
	} else {
		b.WriteString(orSomeone(resp.By) + " allowed it, and the answer was handed to the process.\n\n")
	}
	b.WriteString("What Parley knows: ")
	switch {
	case !f.StartedAt.IsZero():
		fmt.Fprintf(&b, "the call started at %s UTC", f.StartedAt.UTC().Format(time.TimeOnly))
	default:
		b.WriteString("Parley saw no sign of the call starting, which does not mean it did not start")
	}
	if f.RanFor > 0 {
		fmt.Fprintf(&b, "; it was still running %d seconds after it started", f.RanFor)
	}
	b.WriteString("; none of its output reached Parley (the output comes only with the result); then the process ended.\n\n")
	b.WriteString("So the call may have run, in part or in whole: its result is unknown. ")
	b.WriteString("Check what it did (files, processes, services) before you run it again, and ask the user first if running it twice could do harm.")
	return b.String()
}
