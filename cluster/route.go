package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"parley/attach"
	"parley/runner"
	"parley/store"
)

// forwardWait bounds how long a request forwarded to a live owner may take.
const forwardWait = 60 * time.Second

// Request kinds.
const (
	kindPrompt    = "prompt"
	kindAnswer    = "answer"
	kindInterrupt = "interrupt"
	kindResume    = "resume" // start the process ahead of a message (runner.Supervisor.ResumeAhead)
	kindSwitch    = "switch" // a model or permission mode switch (switch.go)
)

// request is what a forwarded request carries.
type request struct {
	Text    string          `json:"text,omitempty"`
	By      string          `json:"by,omitempty"`
	ByID    int64           `json:"by_id,omitempty"`
	Parley  bool            `json:"parley,omitempty"` // a prompt of Parley's own (runner.QueuedWork.Parley)
	InputID string          `json:"input_id,omitempty"`
	Resp    runner.Response `json:"resp"`

	// Content and Attached are a prompt's attachments (runner.QueuedWork).
	Content  []json.RawMessage `json:"content,omitempty"`
	Attached json.RawMessage   `json:"attached,omitempty"`
	// Kept carries a prompt's attachments in their place, as the saved
	// queue keeps them (attach.Keep: ids, not bytes); the owner reads the
	// images again from the attachments table (restoreAttachments).
	Kept json.RawMessage `json:"kept,omitempty"`
	// Switch and ProjectID are a switch's (kindSwitch).
	Switch    *runner.Switch `json:"switch,omitempty"`
	ProjectID int64          `json:"project_id,omitempty"`
}

// Prompt sends a user turn to the session's process on whichever replica
// owns the session; with no live owner this replica takes the lease and
// starts the process.
func (n *Node) Prompt(ctx context.Context, sessionID string, start runner.Starter, text string, by runner.Author) error {
	return n.promptWork(ctx, sessionID, start, runner.QueuedWork{Text: text, By: by.Name, ByID: by.ID})
}

// promptWork is Prompt for a prompt that may be Parley's own (w.Parley).
func (n *Node) promptWork(ctx context.Context, sessionID string, start runner.Starter, w runner.QueuedWork) error {
	kept, err := attach.Keep(w.Content, w.Attached)
	if err != nil {
		return err
	}
	req := request{Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley, Kept: kept}
	return n.route(ctx, sessionID, true, kindPrompt, req, func() error {
		return n.afterQueue(ctx, sessionID, func() error { return n.Supervisor.PromptWork(ctx, sessionID, start, w) })
	})
}

// Answer delivers a response to a pending ask of the session, on the
// owner. Exactly one answer resolves an ask (the store decides).
func (n *Node) Answer(ctx context.Context, sessionID string, start runner.Starter, inputID string, resp runner.Response) error {
	return n.route(ctx, sessionID, true, kindAnswer, request{InputID: inputID, Resp: resp}, func() error {
		return n.afterQueue(ctx, sessionID, func() error { return n.Supervisor.Answer(ctx, sessionID, start, inputID, resp) })
	})
}

// Interrupt stops the session's current turn on the owner.
func (n *Node) Interrupt(ctx context.Context, sessionID, by string) error {
	return n.route(ctx, sessionID, false, kindInterrupt, request{By: by}, func() error {
		return n.Supervisor.Interrupt(ctx, sessionID, by)
	})
}

// ResumeAhead starts the session's process ahead of a message on whichever
// replica owns the session; with no live owner this replica takes the
// lease, as the message would. It is a hint: with no free slot it does
// nothing.
func (n *Node) ResumeAhead(ctx context.Context, sessionID string, start runner.Starter) error {
	return n.route(ctx, sessionID, true, kindResume, request{}, func() error {
		return n.Supervisor.ResumeAhead(ctx, sessionID, start)
	})
}

// route runs local on this replica when it owns the session (acquire:
// taking the lease if nobody live holds it), else forwards the request to
// the owner. A request whose owner stopped before answering is routed again.
func (n *Node) route(ctx context.Context, sessionID string, acquire bool, kind string, req request, local func() error) error {
	payload, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode %s request: %w", kind, err)
	}
	for range 3 {
		var owner string
		if acquire {
			owner, err = n.Store.AcquireLease(ctx, sessionID)
		} else {
			owner, err = n.Store.Owner(ctx, sessionID)
		}
		switch {
		case err != nil:
			return err
		case owner == "":
			return runner.ErrRunEnded
		case owner == n.id:
			if err = local(); !n.drained(ctx, sessionID, err) {
				return err
			}
			continue // leased to another replica next time
		}
		if err = n.forward(ctx, owner, sessionID, kind, payload); !errors.Is(err, errOwnerGone) {
			return err
		}
		n.Log.Info("the replica owning the session stopped; routing again", "session_id", sessionID, "owner", owner)
	}
	return err
}

// forward queues the request for owner and waits for its outcome.
func (n *Node) forward(ctx context.Context, owner, sessionID, kind string, payload json.RawMessage) error {
	id, err := n.Store.QueueRequest(ctx, owner, sessionID, kind, payload)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	n.mu.Lock()
	n.waiters[id] = waiter{owner: owner, done: done}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.waiters, id)
		n.mu.Unlock()
	}()
	// The reply may have come before the waiter was in place: read once.
	if r, err := n.Store.GetRequest(ctx, id); err == nil && r.Done {
		return n.outcome(ctx, id)
	}
	timeout := time.NewTimer(forwardWait)
	defer timeout.Stop()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
		return n.outcome(ctx, id)
	case <-timeout.C:
		return fmt.Errorf("the replica running this session did not answer within %s", forwardWait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outcome reads a finished request's result and removes the request.
func (n *Node) outcome(ctx context.Context, id int64) error {
	r, err := n.Store.GetRequest(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return errOwnerGone // removed by a takeover
	}
	if err != nil {
		return err
	}
	if err := n.Store.DeleteRequest(ctx, id); err != nil {
		n.Log.Warn("delete finished request", "err", err)
	}
	return decodeError(r.Error)
}

// Errors cross replicas by name, so handlers tell them apart as if local.
var namedErrors = map[string]error{
	"run_ended":   runner.ErrRunEnded,
	"not_pending": runner.ErrNotPending,
	"not_found":   runner.ErrNotFound,
}

func encodeError(err error) string {
	if err == nil {
		return ""
	}
	for name, e := range namedErrors {
		if errors.Is(err, e) {
			return name
		}
	}
	return err.Error()
}

func decodeError(s string) error {
	if s == "" {
		return nil
	}
	if e, ok := namedErrors[s]; ok {
		return e
	}
	return errors.New(s)
}

// ownersGone ends the forwarded requests waiting on replicas that lapsed.
func (n *Node) ownersGone(dead []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range n.waiters {
		for _, d := range dead {
			if w.owner == d {
				select {
				case w.done <- errOwnerGone:
				default:
				}
			}
		}
	}
}

// notified handles one notification, on the listening goroutine.
func (n *Node) notified(channel, payload string) {
	switch channel {
	case store.EventsChannel:
		n.eventsWritten(payload)
	case store.RequestsChannel:
		replica, idText, _ := strings.Cut(payload, " ")
		if id, err := strconv.ParseInt(idText, 10, 64); err == nil && replica == n.id {
			n.wg.Add(1)
			go func() { defer n.wg.Done(); n.serveRequest(id) }()
		}
	case store.SignalsChannel:
		n.signalled(payload)
	case store.HandoverChannel:
		n.wg.Add(1)
		go func() { defer n.wg.Done(); n.handedOver(payload) }()
	case store.RepliesChannel:
		if id, err := strconv.ParseInt(payload, 10, 64); err == nil {
			n.mu.Lock()
			if w, ok := n.waiters[id]; ok {
				select {
				case w.done <- nil:
				default:
				}
			}
			n.mu.Unlock()
		}
	}
}

// serveRequest carries out a request another replica forwarded here.
func (n *Node) serveRequest(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), forwardWait)
	defer cancel()
	r, err := n.Store.TakeRequest(ctx, id)
	if err != nil {
		n.Log.Debug("take forwarded request", "request_id", id, "err", err)
		return
	}
	var req request
	if err := json.Unmarshal(r.Payload, &req); err != nil {
		_ = n.Store.FinishRequest(ctx, id, "undecodable request")
		return
	}
	start := n.Starter(r.SessionID)
	switch r.Kind {
	case kindPrompt:
		w := runner.QueuedWork{Text: req.Text, By: req.By, ByID: req.ByID, Parley: req.Parley, Content: req.Content, Attached: req.Attached}
		if err = n.restoreAttachments(ctx, req.Kept, &w); err == nil {
			err = n.afterQueue(ctx, r.SessionID, func() error { return n.Supervisor.PromptWork(ctx, r.SessionID, start, w) })
		}
	case kindAnswer:
		err = n.afterQueue(ctx, r.SessionID, func() error {
			return n.Supervisor.Answer(ctx, r.SessionID, start, req.InputID, req.Resp)
		})
	case kindInterrupt:
		err = n.Supervisor.Interrupt(ctx, r.SessionID, req.By)
	case kindResume:
		err = n.Supervisor.ResumeAhead(ctx, r.SessionID, start)
	case kindSwitch:
		err = n.serveSwitch(ctx, r.SessionID, req)
	default:
		err = fmt.Errorf("unknown request %q", r.Kind)
	}
	if err := n.Store.FinishRequest(context.WithoutCancel(ctx), id, encodeError(err)); err != nil {
		n.Log.Error("finish forwarded request", "request_id", id, "err", err)
	}
}
