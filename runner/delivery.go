package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"parley/askuser"
	"parley/streamjson"
)

// Event types of an answer's delivery to Claude.
const (
	// TypeInputDelivered: an answer reached Claude, as the tool's result or
	// as a new turn ({"input_id","how"}).
	TypeInputDelivered = "input_delivered"
	// TypeInputUndelivered: answers saved but not received by the process,
	// which ended; they go to the session's next run ({"input_ids","reason"}).
	TypeInputUndelivered = "input_undelivered"
)

// How an answer reached Claude (inputs.delivered_how).
const (
	DeliveredToolResult = "tool_result"
	DeliveredNewTurn    = "new_turn"
)

// ErrDelivered means an answer was already marked delivered.
var ErrDelivered = errors.New("answer already delivered")

// OwedAnswer is an answer saved and not yet delivered to Claude.
type OwedAnswer struct {
	ID      string
	Kind    string
	Status  string // answered | denied
	Payload json.RawMessage
	Answer  json.RawMessage // the Response
}

// DeliveryJournal is a Journal that tracks whether answers reached Claude.
// Without it every answer handed to a process counts as delivered.
type DeliveryJournal interface {
	// MarkDelivered records how the answer of input id reached Claude and
	// appends e, once: a second call returns ErrDelivered.
	MarkDelivered(ctx context.Context, id, how string, e Event) error
	// OwedAnswers returns the session's answers not yet delivered.
	OwedAnswers(ctx context.Context, sessionID string) ([]OwedAnswer, error)
}

// handedOver is an answer written to the process (the relay's response or
// the control_response), waiting for the CLI to print the tool's result:
// only then does the conversation hold it. A process that dies in between
// never passed it to the model.
type handedOver struct {
	p      AskPayload
	status askuser.Status
	resp   Response
	facts  CallFacts // what the process printed of the call meanwhile
}

// deliveries is the run's part in getting every answer to Claude.
type deliveries struct {
	awaiting map[string]handedOver // tool_use id → the answer handed over
	owing    bool                  // the process ended holding answers it never took
}

// handOver notes an answer just given to the waiting process: delivered
// when its tool result shows on stdout. An ask with no tool_use id to look
// for counts as delivered now.
func (r *Run) handOver(ctx context.Context, pa pendingAsk, status askuser.Status, resp Response) {
	if status != askuser.StatusAnswered && status != askuser.StatusDeclined {
		return // timeouts and cancellations are Parley's own, not owed to anyone
	}
	if pa.p.ToolUseID == "" {
		r.markDelivered(ctx, pa.p.InputID, DeliveredToolResult)
		return
	}
	if r.awaiting == nil {
		r.awaiting = map[string]handedOver{}
	}
	r.awaiting[pa.p.ToolUseID] = handedOver{p: pa.p, status: status, resp: resp}
}

// savedAnswer returns the answer already given to the call toolUseID, for a
// relay client that asks again after its connection broke: the process
// still waits, so the answer goes to it as the tool's result.
func (r *Run) savedAnswer(toolUseID string) (askuser.Answer, bool) {
	h, ok := r.awaiting[toolUseID]
	if !ok || toolUseID == "" || h.p.Source != SourceAskUser {
		return askuser.Answer{}, false
	}
	return askuser.Answer{Status: h.status, Replies: h.resp.Replies, AnsweredBy: h.resp.By, Reason: h.resp.Reason}, true
}

// confirmDeliveries reads a stdout "user" line: the tool result of a call
// whose answer was handed over means Claude has the answer, unless
// AnswerTaken says the result took no answer. An ask_user call that ended
// in an error instead (the relay broke on the way) never gave the model
// its answer; it is sent at once as a new turn, unless the run is ending.
// An answer not taken stays handed over: the process's end makes it owed.
func (r *Run) confirmDeliveries(ctx context.Context, raw json.RawMessage) {
	if len(r.awaiting) == 0 {
		return
	}
	var u streamjson.MessageLine[streamjson.Message]
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	for _, b := range u.Message.Content {
		h, ok := r.awaiting[b.ToolUseID]
		if b.Type != "tool_result" || !ok {
			continue
		}
		taken := AnswerTaken(h.p.Source, b)
		if !taken && (h.p.Source != SourceAskUser || r.stopping) {
			continue // still handed over: owed once the process has ended
		}
		delete(r.awaiting, b.ToolUseID)
		if !taken {
			r.log.Warn("ask_user ended in an error after it was answered; sending the answer as a new turn", "input_id", h.p.InputID)
			_ = r.deliverAsTurn(ctx, h.p, h.status, h.resp) // logged; owed to the next run if it failed
			continue
		}
		r.markDelivered(ctx, h.p.InputID, DeliveredToolResult)
	}
}

// deliverAsTurn sends an answer the process never took as the next user
// turn, quoting the ask, and marks it delivered that way.
func (r *Run) deliverAsTurn(ctx context.Context, p AskPayload, status askuser.Status, resp Response) error {
	return r.sendAsTurn(ctx, p, resp, LateAnswerText(p, status, resp))
}

// sendAsTurn sends text, which delivers the answer resp to ask p, as the
// next user turn, and marks the answer delivered that way.
func (r *Run) sendAsTurn(ctx context.Context, p AskPayload, resp Response, text string) error {
	if err := r.turn(ctx, sentTurn{text: text, by: Author{Name: resp.By, ID: resp.ByID}}, 0); err != nil {
		r.log.Error("send an answer as a new turn", "input_id", p.InputID, "err", err)
		return err
	}
	r.markDelivered(ctx, p.InputID, DeliveredNewTurn)
	return nil
}

// markDelivered records that an answer reached Claude, with its event.
func (r *Run) markDelivered(ctx context.Context, id, how string) {
	dj, ok := r.journal.(DeliveryJournal)
	if !ok {
		return
	}
	r.flush(ctx) // the delivery's event follows the batch's in the log
	payload, err := json.Marshal(map[string]string{"input_id": id, "how": how})
	if err != nil {
		r.log.Error("encode delivery", "err", err)
		return
	}
	e := r.event(TypeInputDelivered, payload)
	// Waits out a database outage: an answer sent as a turn and not marked
	// would be sent again by the next run.
	err = r.persist(ctx, func(ctx context.Context) error { return dj.MarkDelivered(ctx, id, how, e) }, r.seqCommitted(e.Seq, e.Seq))
	if err != nil {
		if !errors.Is(err, ErrDelivered) {
			r.resync(ctx)
			r.log.Error("mark answer delivered", "input_id", id, "how", how, "err", err)
		}
		return
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	r.log.Info("answer delivered", "input_id", id, "how", how)
}

// settleDeliveries runs when the process has ended: answers it was handed
// and never took are owed to the session's next run, and every page says
// so. resume: the process died on its own, so the next run starts now
// (Parley stopping it, for shutdown or an archive, leaves them for later).
func (r *Run) settleDeliveries(ctx context.Context, resume bool) {
	r.drainLines(ctx) // a tool result may still wait in the line buffer
	if len(r.awaiting) == 0 {
		return
	}
	ids := make([]string, 0, len(r.awaiting))
	calls := map[string]CallFacts{} // for the run that delivers them (OwedAnswerText)
	for _, h := range r.awaiting {
		ids = append(ids, h.p.InputID)
		calls[h.p.InputID] = h.facts
		r.log.Warn("answer not delivered: the process ended before it took it", "input_id", h.p.InputID)
	}
	r.awaiting, r.owing = nil, resume && r.started
	r.recordJSON(ctx, TypeInputUndelivered, map[string]any{"input_ids": ids, "reason": "the Claude process ended", "calls": calls})
}

// drainLines handles the stdout lines still buffered once the reader has
// closed the channel: the loop may take the exit before the last lines.
func (r *Run) drainLines(ctx context.Context) {
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				return
			}
			if r.handleLines(ctx, l, r.lines) {
				return
			}
		default:
			return
		}
	}
}

// deliverOwed sends the session's owed answers (saved while no process
// took them) to this new run, before anything else: each as the tool's
// result if the resumed conversation already holds it (the CLI saved the
// result in its transcript before it died), else as a new turn quoting
// the ask.
func (r *Run) deliverOwed(ctx context.Context) {
	dj, ok := r.journal.(DeliveryJournal)
	if !ok {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, writeTimeout)
	owed, err := dj.OwedAnswers(lctx, r.spec.SessionID)
	cancel()
	if err != nil {
		r.log.Error("read answers owed to Claude", "err", err)
		return
	}
	var facts map[string]CallFacts
	if len(owed) > 0 {
		facts = r.undeliveredFacts(ctx)
	}
	for _, o := range owed {
		p, status, resp, err := o.decode()
		if err != nil {
			r.log.Error("decode an owed answer", "input_id", o.ID, "err", err)
			continue
		}
		if r.spec.Resume && transcriptHasResult(r.spec.ConfigDir, r.spec.ClaudeSessionID, p) {
			r.markDelivered(ctx, o.ID, DeliveredToolResult)
			continue
		}
		r.log.Info("sending an owed answer as a new turn", "input_id", o.ID)
		// Handed to a process that ended before the call's result: an
		// allowed call may have run (OwedAnswerText).
		_ = r.sendAsTurn(ctx, p, resp, OwedAnswerText(p, status, resp, facts[o.ID])) // logged; still owed if it failed
	}
}

// decode reads an owed answer's ask and response.
func (o OwedAnswer) decode() (AskPayload, askuser.Status, Response, error) {
	var p AskPayload
	var resp Response
	if err := json.Unmarshal(o.Payload, &p); err != nil {
		return p, "", resp, fmt.Errorf("decode ask %s: %w", o.ID, err)
	}
	if len(o.Answer) > 0 {
		if err := json.Unmarshal(o.Answer, &resp); err != nil {
			return p, "", resp, fmt.Errorf("decode answer %s: %w", o.ID, err)
		}
	}
	p.InputID, p.Kind = o.ID, o.Kind
	status := askuser.StatusAnswered
	if o.Status == "denied" {
		status = askuser.StatusDeclined
	}
	return p, status, resp, nil
}

// OwesAnswers reports whether the run ended holding answers its process
// never took, which the session's next run must deliver.
func (r *Run) OwesAnswers() bool { return r.owing }
