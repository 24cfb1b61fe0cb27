package transcript

import (
	"encoding/json"

	"parley/runner"
)

// turns follows the turns of a session's last run through its log, and
// through what reconciling adds to it: the prompts the run wrote to the
// CLI, how many turns ended, and of the one after them, whether the CLI
// began it and whether it was being stopped. The log may lag the CLI after
// a crash (its stdout was not all read), but never the transcript once it
// is reconciled: a turn whose result never reached the log ended if its
// last message did (its stop_reason, in the stream or the transcript).
type turns struct {
	prompts []runner.CutTurn
	ended   int             // turns that ended
	ending  string          // a message that ended the running turn, its result not logged
	current string          // the message streaming
	begun   bool            // the CLI began the running turn (turn ended+1)
	stopped bool            // the running turn was being stopped
	asks    map[string]bool // its asks not yet answered to the process
}

// endsTurn reports whether a message that stopped for this reason ends its
// turn: anything but a tool call (or a pause the CLI goes on from).
func endsTurn(stopReason string) bool {
	switch stopReason {
	case "end_turn", "stop_sequence", "max_tokens", "refusal":
		return true
	}
	return false
}

// endTurn counts the running turn as ended.
func (t *turns) endTurn() {
	t.ended++
	t.ending, t.begun, t.stopped = "", false, false
	clear(t.asks)
}

// message notes a message of the main conversation: one after the message
// that ended the running turn begins the next.
func (t *turns) message(id string) {
	if t.ending != "" && id != t.ending {
		t.endTurn()
	}
	t.begun = true
}

// follow notes one event of the log, or one that reconciling adds.
func (t *turns) follow(typ string, payload []byte) {
	var p struct {
		Text            string          `json:"text"`
		By              string          `json:"by"`
		ByID            int64           `json:"by_id"`
		InputID         string          `json:"input_id"`
		StopsTurn       bool            `json:"stops_turn"`
		ParentToolUseID *string         `json:"parent_tool_use_id"`
		Message         json.RawMessage `json:"message"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	switch typ {
	case runner.TypeRunStarted:
		*t = turns{}
	case runner.TypePrompt:
		t.prompts = append(t.prompts, runner.CutTurn{Text: p.Text, By: runner.Author{Name: p.By, ID: p.ByID}})
	case "result":
		t.endTurn()
	case "system": // init: the CLI begins a turn
		t.message("")
	case runner.TypeInterrupt:
		t.stopped = true
	case runner.TypeNotice:
		t.stopped = t.stopped || p.StopsTurn
	case runner.TypeInputRequested:
		if t.asks == nil {
			t.asks = map[string]bool{}
		}
		t.asks[p.InputID] = true
	case runner.TypeInputDelivered:
		delete(t.asks, p.InputID)
	case "assistant", "user":
		var m struct {
			ID         string `json:"id"`
			StopReason string `json:"stop_reason"`
		}
		if p.ParentToolUseID != nil || json.Unmarshal(p.Message, &m) != nil {
			return
		}
		if typ == "user" {
			t.begun = true // a tool's result: the turn goes on
			return
		}
		t.message(m.ID)
		if endsTurn(m.StopReason) {
			t.ending = m.ID
		}
	case "stream_event":
		e, ok := runner.DecodeStreamEvent(payload)
		switch {
		case !ok:
		case e.Type == "message_start":
			t.message(e.MessageID)
			t.current = e.MessageID
		case e.Type == "message_delta" && endsTurn(e.StopReason):
			t.ending = t.current
		}
	}
}

// cut returns the turns the run wrote and did not finish, oldest first,
// whether the CLI began the first, and whether it was being stopped or
// waited for an ask.
func (t *turns) cut() (unfinished []runner.CutTurn, begun, stopped bool) {
	if t.ending != "" {
		t.endTurn()
	}
	if t.ended >= len(t.prompts) {
		return nil, false, false
	}
	return t.prompts[t.ended:], t.begun, t.stopped || len(t.asks) > 0
}
