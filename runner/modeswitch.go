package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"parley/streamjson"
)

// TypeSwitched is a switch of the session's model or permission mode, by a
// member (the page's menus, a typed `/model NAME`): its payload is a Switch.
const TypeSwitched = "switched"

// What a Switch changes.
const (
	SwitchModel = "model"
	SwitchMode  = "permission_mode"
)

// Switch is a change of a session's model or permission mode, as its event
// records it: who made it, from what to what.
type Switch struct {
	What string `json:"what"` // SwitchModel or SwitchMode
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Model is the model id the CLI resolved To to (set_model answers
	// {"model":"claude-haiku-5-5"} for "haiku"); "" when no process was live.
	Model string `json:"model,omitempty"`
	By    string `json:"by"`
	// Live says the running process switched; else the switch waits for
	// the session's next start.
	Live bool `json:"live"`
}

// SwitchError is the CLI's refusal of a switch, with its reason.
type SwitchError struct {
	Code, Msg string
}

func (e *SwitchError) Error() string { return "claude refused the switch: " + e.Msg }

// Switch changes the session's model or permission mode: in its live
// process with the control requests set_model / set_permission_mode (the
// event is written once the CLI accepted it), or, with no process live,
// as an event only — the caller remembers the choice for the next start.
// Like Expire it holds the supervisor's lock while it writes the event of
// a session without a run, so no run can start and number events meanwhile.
func (s *Supervisor) Switch(ctx context.Context, projectID int64, sessionID string, sw Switch) error {
	s.mu.Lock()
	r, live := s.runs[sessionID]
	if live {
		s.mu.Unlock()
		sw.Live = true
		reply := make(chan error, 1)
		return r.send(ctx, switchCmd{sw: sw, reply: reply}, reply)
	}
	defer s.mu.Unlock()
	last, err := s.journal.LastSeq(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("switch %s of session %s: %w", sw.What, sessionID, err)
	}
	e := Event{SessionID: sessionID, ProjectID: projectID, Seq: last + 1, Type: TypeSwitched, Payload: mustJSON(sw), CreatedAt: time.Now()}
	if err := s.journal.Append(ctx, e); err != nil {
		return fmt.Errorf("switch %s of session %s: %w", sw.What, sessionID, err)
	}
	s.pub.Publish(e)
	return nil
}

// switching holds a run's switches written to the CLI and not answered yet,
// by request id; only the run's loop touches it.
type switching struct {
	switches map[string]pendingSwitch
}

// pendingSwitch is a switch written to the CLI and not answered yet.
type pendingSwitch struct {
	sw    Switch
	reply chan error
}

// switchCmd writes a set_model or set_permission_mode control request; the
// reply comes with the CLI's control_response (switchAnswered).
type switchCmd struct {
	sw    Switch
	reply chan error
}

func (c switchCmd) run(ctx context.Context, r *Run) error {
	if r.stopping {
		c.reply <- ErrRunEnded
		return nil
	}
	r.nextReq++
	id := "parley-switch-" + strconv.Itoa(r.nextReq)
	line := streamjson.NewSetModel(id, c.sw.To)
	if c.sw.What == SwitchMode {
		line = streamjson.NewSetPermissionMode(id, c.sw.To)
	}
	if err := r.write(ctx, line); err != nil {
		c.reply <- err
		return err
	}
	if r.switches == nil {
		r.switches = map[string]pendingSwitch{}
	}
	r.switches[id] = pendingSwitch{sw: c.sw, reply: c.reply}
	return nil
}

// switchAnswered handles the CLI's control_response to a switch: success
// records the switch, an error goes back to whoever asked.
func (r *Run) switchAnswered(ctx context.Context, raw json.RawMessage) {
	var a streamjson.ControlAnswer
	if json.Unmarshal(raw, &a) != nil {
		return
	}
	ps, ok := r.switches[a.Response.RequestID]
	if !ok {
		return // an interrupt's answer, or another request's
	}
	delete(r.switches, a.Response.RequestID)
	if a.Response.Subtype != "success" {
		ps.reply <- &SwitchError{Code: a.Response.ErrorCode, Msg: a.Response.Error}
		return
	}
	sw := ps.sw
	var got struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(a.Response.Response, &got) == nil && sw.What == SwitchModel {
		sw.Model = got.Model
	}
	r.recordJSON(ctx, TypeSwitched, sw)
	ps.reply <- nil
}

// switchEcho says whether l is the CLI's echo of a set_model it was sent:
// with --replay-user-messages it prints a replayed user line
// "<local-command-stdout>Set model to `haiku (claude-haiku-5-5)`</local-command-stdout>"
// before its control_response. It is no prompt read (promptRead must not
// count it) and the switch event says it, so it is not kept.
func (r *Run) switchEcho(l Line) bool {
	if l.Type != "user" || len(r.switches) == 0 {
		return false
	}
	var u struct {
		IsReplay bool `json:"isReplay"`
		Message  struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(l.Raw, &u) != nil || !u.IsReplay {
		return false
	}
	var text string
	return json.Unmarshal(u.Message.Content, &text) == nil && strings.HasPrefix(text, "<local-command-stdout>")
}
