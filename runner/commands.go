package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"parley/askuser"
)

// turnCmd writes a user turn. A turn sent while another runs is queued by
// the CLI and runs after it.
type turnCmd struct {
	text, by string
	reply    chan error
}

func (c turnCmd) run(ctx context.Context, r *Run) error {
	r.recordJSON(ctx, TypePrompt, map[string]any{"text": c.text, "by": c.by, "queued": r.busy})
	err := r.write(ctx, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": c.text}})
	if err == nil && !r.busy {
		r.busy = true
		r.changeSession(ctx, SessionChange{Status: r.status()})
	}
	c.reply <- err
	return err
}

// interruptCmd stops the current turn with the interrupt control request;
// the process survives and takes the next turn.
type interruptCmd struct {
	by    string
	reply chan error
}

func (c interruptCmd) run(ctx context.Context, r *Run) error {
	r.nextReq++
	id := "parley-interrupt-" + strconv.Itoa(r.nextReq)
	r.recordJSON(ctx, TypeInterrupt, map[string]any{"by": c.by, "request_id": id})
	err := r.write(ctx, map[string]any{"type": "control_request", "request_id": id,
		"request": map[string]any{"subtype": "interrupt"}})
	// The CLI cancels a blocked MCP call on interrupt; close the asks here
	// too so every page shows it at once, whatever the MCP server does.
	for aid := range r.pending {
		if rerr := r.resolve(ctx, aid, askuser.Answer{Status: askuser.StatusCancelled, Reason: "the run was stopped"}); rerr != nil {
			r.log.Warn("cancel ask on interrupt", "input_id", aid, "err", rerr)
		}
	}
	c.reply <- err
	return err
}

// askCmd opens an ask_user question relayed by `parley mcp-askuser`.
type askCmd struct {
	q     askuser.Question
	reply chan askOpened
}

type askOpened struct {
	id     string
	answer <-chan askuser.Answer
	err    error
}

func (c askCmd) run(ctx context.Context, r *Run) error {
	id := uuid.NewString()
	deadline := time.Now().Add(r.askTimeout)
	payload, err := json.Marshal(map[string]any{
		"input_id": id, "kind": "question", "question": c.q,
		"timeout_seconds": int(r.askTimeout / time.Second), "deadline": deadline,
	})
	if err != nil {
		c.reply <- askOpened{err: err}
		return err
	}
	in := Input{ID: id, SessionID: r.spec.SessionID, RunID: r.id, Kind: "question", Payload: payload, Deadline: &deadline}
	e := Event{SessionID: r.spec.SessionID, Seq: r.seq + 1, Type: TypeInputRequested, Payload: payload, CreatedAt: time.Now()}
	if err := r.journal.OpenInput(ctx, in, e); err != nil {
		err = fmt.Errorf("open input: %w", err)
		c.reply <- askOpened{err: err}
		return err
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	ch := r.broker.Open(id, r.askTimeout, func(id string) {
		r.post(resolveCmd{id: id, answer: askuser.Answer{Status: askuser.StatusTimedOut}})
	})
	r.pending[id] = pendingAsk{kind: "question", question: c.q}
	r.changeSession(ctx, SessionChange{Status: r.status()})
	c.reply <- askOpened{id: id, answer: ch}
	return nil
}

// answerCmd is a member's answer to a pending ask.
type answerCmd struct {
	id    string
	a     askuser.Answer
	reply chan error
}

func (c answerCmd) run(ctx context.Context, r *Run) error {
	err := c.check(r)
	if err == nil {
		c.a.Status = askuser.StatusAnswered
		err = r.resolve(ctx, c.id, c.a)
	}
	c.reply <- err
	return err
}

// check validates an answer against the question it answers.
func (c answerCmd) check(r *Run) error {
	p, ok := r.pending[c.id]
	if !ok {
		return ErrNotPending
	}
	return ValidateAnswer(p.question, c.a)
}

// AnswerError says why an answer does not fit its question, in a sentence
// for the member who sent it.
type AnswerError struct{ msg string }

func (e *AnswerError) Error() string { return e.msg }

// ValidateAnswer checks an answer against its question.
func ValidateAnswer(q askuser.Question, a askuser.Answer) error {
	if len(a.Selected) == 0 && a.Text == "" {
		return &AnswerError{"Choose an option or write an answer."}
	}
	if len(a.Selected) > 1 && !q.MultiSelect {
		return &AnswerError{"This question takes one option."}
	}
	for _, s := range a.Selected {
		if !hasOption(q, s) {
			return &AnswerError{fmt.Sprintf("%q is not one of the options.", s)}
		}
	}
	return nil
}

func hasOption(q askuser.Question, label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}

// resolveCmd closes an ask on Parley's own account (timeout, withdrawal).
type resolveCmd struct {
	id     string
	answer askuser.Answer
}

func (c resolveCmd) run(ctx context.Context, r *Run) error {
	if _, ok := r.pending[c.id]; !ok {
		return nil // answered meanwhile
	}
	return r.resolve(ctx, c.id, c.answer)
}

// post hands a command to the loop without waiting for its result.
func (r *Run) post(c command) {
	select {
	case r.cmds <- c:
	case <-r.done:
	}
}

// resolve ends a pending ask exactly once: the store's conditional update
// decides, then the event is published and the waiting relay released.
func (r *Run) resolve(ctx context.Context, id string, a askuser.Answer) error {
	answer, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	payload, err := json.Marshal(map[string]any{"input_id": id, "status": a.Status, "answer": a,
		"answered_by": a.AnsweredBy, "reason": a.Reason})
	if err != nil {
		return fmt.Errorf("encode resolution: %w", err)
	}
	e := Event{SessionID: r.spec.SessionID, Seq: r.seq + 1, Type: TypeInputResolved, Payload: payload, CreatedAt: time.Now()}
	if err := r.journal.ResolveInput(ctx, id, string(a.Status), answer, a.AnsweredBy, e); err != nil {
		return err
	}
	r.seq = e.Seq
	r.pub.Publish(e)
	delete(r.pending, id)
	if err := r.broker.Resolve(id, a); err != nil && !errors.Is(err, askuser.ErrAlreadyResolved) {
		r.log.Warn("release ask", "input_id", id, "err", err)
	}
	r.changeSession(ctx, SessionChange{Status: r.status()})
	return nil
}
