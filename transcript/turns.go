package transcript

import (
	"encoding/json"
	"slices"

	"parley/runner"
	"parley/streamjson"
)

// turns follows the turns of a session's last run through its log, and
// through what reconciling adds to it: the prompts the run wrote to the
// CLI, how many turns ended, and of the one after them, whether the CLI
// began it, whether it was being stopped, and which of its asks it still
// waits for. The log may lag the CLI after a crash (its stdout was not all
// read), but never the transcript once it is reconciled.
//
// In the log, turns are told apart by the CLI's own marks: a system/init
// begins one and a result ends it; a message whose stop_reason ends a turn
// ends it too when no result follows (the crash came first). Steps
// recovered from the transcript have no such marks: there a message after
// one that ended a turn begins the next.
type turns struct {
	prompts []runner.CutTurn
	ended   int    // turns that ended
	ending  string // a message that ended the running turn, its result not logged
	current string // the main conversation's last message
	begun   bool   // the CLI began the running turn (turn ended+1)
	stopped bool   // the running turn was being stopped
	// asks are the running turn's asks (input id → its call) whose
	// answers the CLI has not taken: the turn waits for them.
	asks map[string]askCall
	// cutCalls are the running turn's allowed calls whose error result
	// reached only the transcript (the run was lost while they ran): the
	// turn goes on, and Claude is told they were cut off.
	cutCalls []string
}

// askCall is the tool call an ask belongs to.
type askCall struct {
	toolUseID, source, tool string
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
	t.cutCalls = nil
}

// message notes a message of the main conversation. Every tool call before
// it had its result (the model is asked only then), so no ask is waited
// for any more.
func (t *turns) message(id string, recovered bool) {
	if t.ending != "" && id != t.ending {
		if recovered {
			t.endTurn() // the transcript's next turn
		} else {
			t.ending = "" // the log has no result, no init: the same turn goes on
		}
	}
	if id != t.current {
		clear(t.asks)
	}
	t.current, t.begun = id, true
}

// follow notes one event of the log, or one that reconciling adds
// (recovered).
func (t *turns) follow(typ string, payload []byte, recovered bool) {
	var p struct {
		Text      string   `json:"text"`
		By        string   `json:"by"`
		ByID      int64    `json:"by_id"`
		Parley    bool     `json:"parley"`
		InputID   string   `json:"input_id"`
		InputIDs  []string `json:"input_ids"`
		ToolUseID string   `json:"tool_use_id"`
		ToolName  string   `json:"tool_name"`
		Source    string   `json:"source"`
		Status    string   `json:"status"`
		Reason    string   `json:"reason"`
		StopsTurn bool     `json:"stops_turn"`
		// The CLI's assistant and user lines.
		streamjson.MessageLine[json.RawMessage]
	}
	if json.Unmarshal(payload, &p) != nil {
		return
	}
	switch typ {
	case runner.TypeRunStarted:
		*t = turns{}
	case runner.TypePrompt, runner.TypeTurnResent:
		t.prompts = append(t.prompts, runner.CutTurn{Text: p.Text, By: runner.Author{Name: p.By, ID: p.ByID}, Parley: p.Parley})
	case "result":
		t.endTurn()
	case "system": // init: the CLI begins a turn
		if t.ending != "" {
			t.endTurn()
		}
		t.begun = true
	case runner.TypeInterrupt, runner.TypeNotice:
		// A stop with no turn to stop (between turns) stops nothing.
		if (typ == runner.TypeInterrupt || p.StopsTurn) && t.ended < len(t.prompts) {
			t.stopped = true
		}
	case runner.TypeInputRequested:
		if t.asks == nil {
			t.asks = map[string]askCall{}
		}
		t.asks[p.InputID] = askCall{toolUseID: p.ToolUseID, source: p.Source, tool: p.ToolName}
	case runner.TypeInputDelivered:
		delete(t.asks, p.InputID)
	case runner.TypeInputResolved:
		// Answers are waited for until the CLI takes them; a timeout or
		// a cancellation the CLI got at once.
		if p.Status != "answered" && p.Status != "denied" {
			delete(t.asks, p.InputID)
		}
	case runner.TypeInputDetached:
		// Withdrawn by Claude, the turn goes on without it; detached as
		// its process ended (the takeover says so too), it is still owed.
		if p.Reason == runner.Withdrawn {
			for _, id := range p.InputIDs {
				delete(t.asks, id)
			}
		}
	case "assistant", "user":
		var m streamjson.Message
		if p.ParentToolUseID != nil || json.Unmarshal(p.Message, &m) != nil {
			return
		}
		if typ == "user" {
			t.begun = true
			t.results(m.Content, recovered)
			return
		}
		t.message(m.ID, recovered)
		if endsTurn(m.StopReason) {
			t.ending = m.ID
		}
	case "stream_event":
		e, ok := streamjson.DecodeStreamEvent(payload)
		switch {
		case !ok:
		case e.Type == "message_start":
			t.message(e.MessageID, recovered)
		case e.Type == "message_delta" && endsTurn(e.StopReason):
			t.ending = t.current
		}
	}
}

// results notes a "user" message's tool results: the turn goes on, with
// the answers the CLI took by runner.AnswerTaken, the rule the delivery of
// owed answers follows too. An error result the CLI wrote for a call whose
// permission request it still waited on when it was ended ("Tool
// permission request failed: AbortError…") took no answer: that one is
// owed. An allowed call's error that only the transcript holds was cut
// off with the lost run.
func (t *turns) results(blocks []streamjson.ContentBlock, recovered bool) {
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		for id, call := range t.asks {
			if call.toolUseID == "" || call.toolUseID != b.ToolUseID || !runner.AnswerTaken(call.source, b) {
				continue
			}
			delete(t.asks, id)
			if recovered && b.IsError {
				t.cutCalls = append(t.cutCalls, call.tool)
			}
		}
	}
}

// stoppedAs notes why the transcript says the messages stopped (message id
// → stop_reason): the log's own copy of a message printed on stdout has
// none, so a last message the log holds whose end (its message_delta, the
// turn's result) never reached it still ends the turn.
func (t *turns) stoppedAs(stops map[string]string) {
	if t.ending == "" && t.current != "" && endsTurn(stops[t.current]) {
		t.ending = t.current
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
	unfinished = slices.Clone(t.prompts[t.ended:])
	if t.begun {
		unfinished[0].CutCalls = t.cutCalls
	}
	return unfinished, t.begun, t.stopped || len(t.asks) > 0
}
