package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"parley/askuser"
)

// The kinds of ask (inputs.kind).
const (
	KindQuestion   = "question"   // ask_user / ask_user_questions, or Claude's AskUserQuestion
	KindPermission = "permission" // can_use_tool for any other tool
	KindPlan       = "plan"       // ExitPlanMode: a plan to approve
)

// Where a question comes from.
const (
	SourceAskUser = "ask_user"        // the MCP tool, answered through the relay
	SourceClaude  = "AskUserQuestion" // Claude's own tool, answered with a control_response
)

// AskPayload is the payload of an input_requested event and of the inputs
// row: everything needed to show the ask and to answer it later, even from
// another process.
type AskPayload struct {
	InputID string        `json:"input_id"`
	Kind    string        `json:"kind"`
	Source  string        `json:"source,omitempty"` // for questions
	Form    *askuser.Form `json:"form,omitempty"`
	// Question is the single question of events written before forms.
	Question *askuser.Question `json:"question,omitempty"`

	// The control request, for permissions, plans and AskUserQuestion.
	RequestID   string          `json:"request_id,omitempty"`
	ToolName    string          `json:"tool_name,omitempty"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Suggestions json.RawMessage `json:"permission_suggestions,omitempty"`
	Plan        string          `json:"plan,omitempty"`
	PlanFile    string          `json:"plan_file,omitempty"`

	TimeoutSeconds int        `json:"timeout_seconds,omitempty"`
	Deadline       *time.Time `json:"deadline,omitempty"`
}

// TheForm returns the questions of a question ask.
func (p AskPayload) TheForm() askuser.Form {
	switch {
	case p.Form != nil:
		return *p.Form
	case p.Question != nil:
		return askuser.Single(*p.Question)
	}
	return askuser.Form{}
}

// Response is a member's response to an ask, whatever its kind.
type Response struct {
	By string `json:"by,omitempty"`
	// ByID is the user id of who answered (0 = nobody: a timeout, or an
	// answer from before it was recorded): the page says "You answered"
	// to that user alone.
	ByID int64 `json:"by_id,omitempty"`
	// Via says where the answer came from when not from a page: "Ann's
	// phone", "Slack", "e-mail" (package reach).
	Via string `json:"via,omitempty"`
	// Decline denies a permission, asks for changes to a plan or declines a
	// question; Reason then says why (the plan feedback, for a plan).
	Decline bool   `json:"decline,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// AllowAlways allows a permission and the like of it for the rest of
	// the session (the request's permission suggestions).
	AllowAlways bool `json:"allow_always,omitempty"`
	// Command is a Bash command as the member edited it before allowing.
	Command *string `json:"command,omitempty"`
	// Input is a tool's whole input (a JSON object) as the member edited it
	// before allowing: any tool whose input the card shows.
	Input json.RawMessage `json:"input,omitempty"`
	// Mode is how work continues after a plan is approved: "default" (ask
	// before edits) or "acceptEdits".
	Mode string `json:"mode,omitempty"`
	// Replies answer a question's form, one per question.
	Replies []askuser.Reply `json:"replies,omitempty"`
}

// AnswerError says why a response does not fit its ask, in a sentence for
// the member who sent it.
type AnswerError = askuser.AnswerError

// pendingAsk is an open ask of the run.
type pendingAsk struct {
	p AskPayload
	// attached: the process still waits for this answer (the relay request
	// or the control request is open). A detached ask is answered with a
	// new user turn instead.
	attached bool
	timer    *time.Timer // the deadline, if any
}

// openAsk stores and publishes a new ask. timeout > 0 gives it a deadline,
// after which it is resolved as timed out.
func (r *Run) openAsk(ctx context.Context, p AskPayload, timeout time.Duration) (string, error) {
	r.flush(ctx) // the ask's event follows the batch's in the log
	p.InputID = uuid.NewString()
	var deadline *time.Time
	if timeout > 0 {
		d := time.Now().Add(timeout)
		deadline = &d
		p.TimeoutSeconds, p.Deadline = int(timeout/time.Second), deadline
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode ask: %w", err)
	}
	in := Input{ID: p.InputID, SessionID: r.spec.SessionID, RunID: r.id, Kind: p.Kind, Payload: payload, Deadline: deadline}
	e := r.event(TypeInputRequested, payload)
	err = r.persist(ctx, func(ctx context.Context) error { return r.journal.OpenInput(ctx, in, e) }, r.seqCommitted(e.Seq, e.Seq))
	if err != nil {
		r.resync(ctx)
		return "", fmt.Errorf("open input: %w", err)
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	pa := pendingAsk{p: p, attached: true}
	if timeout > 0 && p.Source != SourceAskUser { // the broker times ask_user out
		id := p.InputID
		pa.timer = time.AfterFunc(timeout, func() {
			r.post(resolveCmd{id: id, status: askuser.StatusTimedOut})
		})
	}
	r.pending[p.InputID] = pa
	r.log.Info("ask opened", "input_id", p.InputID, "kind", p.Kind, "source", p.Source, "tool", p.ToolName,
		"request_id", p.RequestID, "tool_use_id", p.ToolUseID, "timeout_seconds", p.TimeoutSeconds)
	r.changeSession(ctx, SessionChange{Status: r.status()})
	return p.InputID, nil
}

// event is the next event of the log, not yet recorded.
func (r *Run) event(typ string, payload []byte) Event {
	return Event{SessionID: r.spec.SessionID, ProjectID: r.spec.ProjectID, Seq: r.seq + 1, Type: typ,
		Payload: payload, CreatedAt: time.Now()}
}

// statusOf is the inputs status a member's response moves an ask to.
func statusOf(resp Response) askuser.Status {
	if resp.Decline {
		return askuser.StatusDeclined
	}
	return askuser.StatusAnswered
}

// storeStatus maps an outcome to inputs.status: a declined ask is "denied".
func storeStatus(s askuser.Status) string {
	if s == askuser.StatusDeclined {
		return "denied"
	}
	return string(s)
}

// resolve ends a pending ask exactly once: the store's conditional update
// decides, then the event is published and, if the process still waits,
// the answer delivered to it.
func (r *Run) resolve(ctx context.Context, pa pendingAsk, status askuser.Status, resp Response) error {
	r.flush(ctx) // the resolution's event follows the batch's in the log
	id := pa.p.InputID
	answer, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	payload, err := resolutionPayload(pa.p, status, resp, !pa.attached)
	if err != nil {
		return err
	}
	e := r.event(TypeInputResolved, payload)
	err = r.persist(ctx, func(ctx context.Context) error {
		return r.journal.ResolveInput(ctx, id, storeStatus(status), answer, resp.By, e)
	}, r.seqCommitted(e.Seq, e.Seq))
	if err != nil {
		if !errors.Is(err, ErrNotPending) && !errors.Is(err, ErrNotFound) {
			r.resync(ctx)
		}
		return err
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	logResolved(r.log, pa.p, storeStatus(status), resp, !pa.attached)
	delete(r.pending, id)
	if pa.timer != nil {
		pa.timer.Stop()
	}
	if pa.attached {
		r.deliver(ctx, pa, status, resp)
		r.handOver(ctx, pa, status, resp)
	}
	r.changeSession(ctx, SessionChange{Status: r.status()})
	return nil
}

// resolutionPayload is the payload of an input_resolved event.
func resolutionPayload(p AskPayload, status askuser.Status, resp Response, detached bool) (json.RawMessage, error) {
	payload, err := json.Marshal(map[string]any{"input_id": p.InputID, "kind": p.Kind, "status": storeStatus(status),
		"answer": resp, "answered_by": resp.By, "reason": resp.Reason, "detached": detached})
	if err != nil {
		return nil, fmt.Errorf("encode resolution: %w", err)
	}
	return payload, nil
}

// deliver hands the outcome to whoever in the process waits for it.
func (r *Run) deliver(ctx context.Context, pa pendingAsk, status askuser.Status, resp Response) {
	if pa.p.Source == SourceAskUser {
		a := askuser.Answer{Status: status, Replies: resp.Replies, AnsweredBy: resp.By, Reason: resp.Reason}
		if err := r.broker.Resolve(pa.p.InputID, a); err != nil && !errors.Is(err, askuser.ErrAlreadyResolved) {
			r.log.Warn("release ask", "input_id", pa.p.InputID, "err", err)
		}
		return
	}
	r.respond(ctx, pa.p.RequestID, controlReply(pa.p, status, resp))
}

// detach marks asks whose waiter is gone: the process ended, or Claude
// withdrew the call without an interrupt. They stay open; an answer to one
// becomes the next user turn. Their deadlines no longer apply.
func (r *Run) detach(ctx context.Context, ids []string, reason string) {
	var detached []string
	for _, id := range ids {
		pa, ok := r.pending[id]
		if !ok || !pa.attached {
			continue
		}
		if pa.timer != nil {
			pa.timer.Stop()
		}
		if pa.p.Source == SourceAskUser {
			// Frees the broker's entry and timer; nobody reads the answer.
			_ = r.broker.Resolve(id, askuser.Answer{Status: askuser.StatusCancelled, Reason: reason})
		}
		pa.attached, pa.timer = false, nil
		r.pending[id] = pa
		detached = append(detached, id)
	}
	if len(detached) > 0 {
		r.recordJSON(ctx, TypeInputDetached, map[string]any{"input_ids": detached, "reason": reason})
		for _, id := range detached {
			r.log.Info("ask detached", "input_id", id, "reason", reason)
		}
	}
}

// answer applies a member's response to ask id: delivered to the waiting
// process, or, for an ask that outlived its process, as a new turn.
func (r *Run) answer(ctx context.Context, id string, resp Response) error {
	pa, ok := r.pending[id]
	if !ok {
		var err error
		if pa, err = r.loadDetached(ctx, id); err != nil {
			return err
		}
	}
	if resp.Command != nil && *resp.Command == inputObject(pa.p.Input)["command"] {
		resp.Command = nil // the card sends the command field whether edited or not
	}
	if resp.Input != nil && sameJSON(resp.Input, pa.p.Input) {
		resp.Input = nil // likewise the input field
	}
	if err := checkResponse(pa.p, resp); err != nil {
		return err
	}
	status := statusOf(resp)
	if err := r.resolve(ctx, pa, status, resp); err != nil {
		return err
	}
	if !pa.attached {
		return r.deliverAsTurn(ctx, pa.p, status, resp)
	}
	return nil
}

// loadDetached reads an ask of this session that an earlier process opened.
func (r *Run) loadDetached(ctx context.Context, id string) (pendingAsk, error) {
	p, err := loadAsk(ctx, r.journal, r.spec.SessionID, id)
	if err != nil {
		return pendingAsk{}, err
	}
	return pendingAsk{p: p}, nil
}

// loadPending reads the input id of the session while it is pending: an
// input of another session is ErrNotFound, a resolved one ErrNotPending.
func loadPending(ctx context.Context, j Journal, sessionID, id string) (Input, error) {
	in, err := j.LoadInput(ctx, id)
	switch {
	case err != nil:
		return Input{}, err
	case in.SessionID != sessionID:
		return Input{}, ErrNotFound
	case in.Status != "pending":
		return Input{}, ErrNotPending
	}
	return in, nil
}

// loadAsk reads the pending ask id of the session (loadPending) and
// decodes it.
func loadAsk(ctx context.Context, j Journal, sessionID, id string) (AskPayload, error) {
	in, err := loadPending(ctx, j, sessionID, id)
	if err != nil {
		return AskPayload{}, err
	}
	var p AskPayload
	if err := json.Unmarshal(in.Payload, &p); err != nil {
		return AskPayload{}, fmt.Errorf("decode ask %s: %w", id, err)
	}
	p.InputID, p.Kind = in.ID, in.Kind
	return p, nil
}

// checkResponse validates a response against its ask.
func checkResponse(p AskPayload, resp Response) error {
	if resp.Decline {
		return nil
	}
	switch p.Kind {
	case KindQuestion:
		return p.TheForm().Check(resp.Replies)
	case KindPlan:
		if resp.Mode != "" && resp.Mode != "default" && resp.Mode != "acceptEdits" {
			return &AnswerError{Msg: "Choose how work continues: ask before edits, or accept edits."}
		}
	case KindPermission:
		if resp.Command != nil && p.ToolName != "Bash" {
			return &AnswerError{Msg: "Only a Bash command can be edited before allowing it."}
		}
		if resp.Command != nil && resp.AllowAlways {
			return &AnswerError{Msg: "An edited command can be allowed once, not always."}
		}
		if resp.Command != nil && *resp.Command == "" {
			return &AnswerError{Msg: "The command is empty."}
		}
		if err := checkEditedInput(resp); err != nil {
			return err
		}
	}
	return nil
}
