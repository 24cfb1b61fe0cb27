package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"parley/askuser"
	"parley/audit"
	"parley/limit"
	"parley/runner"
	"parley/store"
)

// answerForm is what an ask card sends (htmx ws-send posts the form's
// fields as JSON): the decision of the button pressed, a reason, a Bash
// command as edited, the plan mode, and for questions choice_N / other_N
// per question ("choice" and "other" name question 0).
type answerForm struct {
	InputID   string  `json:"input_id"`
	SessionID string  `json:"session_id"`
	Decision  string  `json:"decision"`
	Reason    string  `json:"reason"`
	Command   *string `json:"command"`
	Input     *string `json:"input"` // a tool's input as edited, JSON
	Mode      string  `json:"mode"`
}

// maxFormQuestions is how many choice_N / other_N fields are read.
const maxFormQuestions = 4

// parseAnswer reads an answer message into the ask it answers and the
// member's response.
func parseAnswer(data []byte, by string) (answerForm, runner.Response, error) {
	var f answerForm
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &f) != nil || json.Unmarshal(data, &fields) != nil {
		return f, runner.Response{}, badRequest("Parley could not read that answer; reload and try again.")
	}
	resp := runner.Response{By: by, Reason: strings.TrimSpace(f.Reason)}
	switch f.Decision {
	case "", "answer":
		resp.Reason = ""
		resp.Replies = replies(fields)
	case "allow":
		resp.Reason, resp.Command = "", f.Command
		if f.Input != nil && strings.TrimSpace(*f.Input) != "" {
			resp.Input = json.RawMessage(strings.TrimSpace(*f.Input))
		}
	case "always":
		resp.Reason, resp.AllowAlways = "", true
	case "approve":
		resp.Reason, resp.Mode = "", f.Mode
	case "deny", "changes", "decline":
		resp.Decline = true
	default:
		return f, resp, badRequest("Unknown decision " + quote(f.Decision) + ".")
	}
	return f, resp, nil
}

// replies reads choice_N and other_N for each question.
func replies(fields map[string]json.RawMessage) []askuser.Reply {
	var out []askuser.Reply
	for i := range maxFormQuestions {
		n := strconv.Itoa(i)
		choice, okC := fields["choice_"+n]
		other, okO := fields["other_"+n]
		if i == 0 && !okC && !okO {
			choice, okC = fields["choice"]
			other, okO = fields["other"]
		}
		if !okC && !okO {
			break
		}
		var sel stringList
		_ = json.Unmarshal(choice, &sel)
		var text string
		_ = json.Unmarshal(other, &text)
		out = append(out, askuser.Reply{Selected: sel, Text: strings.TrimSpace(text)})
	}
	return out
}

// answerAsk applies an answer message from a member's page to an ask of
// sessionID: the session page's socket names its session, the inbox's
// takes the one the card names.
func (s *Server) answerAsk(ctx context.Context, r *http.Request, sessionID string, data []byte) error {
	v := s.viewer(r)
	ctx = audit.WithSource(ctx, pageSource(r, sessionID)) // before sessionID is the card's
	if err := checkNoNUL(data); err != nil {
		return err // the session page checks too; the inbox comes here first
	}
	f, resp, err := parseAnswer(data, v.Name)
	if err != nil {
		return err
	}
	if sessionID == "" {
		sessionID = f.SessionID
	}
	a, err := s.actor(ctx, r)
	if err != nil {
		return answerNotSaved(err)
	}
	return answerNotSaved(s.acts().Answer(ctx, a, sessionID, f.InputID, resp))
}

// deliverAnswer resolves the ask inputID of sess with resp, once: what the
// page and the MCP tool respond both do after authorizing.
func (s *Server) deliverAnswer(ctx context.Context, sess store.Session, inputID string, resp runner.Response) error {
	if err := checkAnswerSize(resp); err != nil {
		return err
	}
	// An answer resumes a session whose process ended: continuing it.
	if err := s.refuseArchived(ctx, sess.ID); err != nil {
		return err
	}
	err := s.runs.Answer(ctx, sess.ID, s.starter(sess), inputID, resp)
	if errors.Is(err, runner.ErrRunEnded) || errors.Is(err, runner.ErrNotPending) || errors.Is(err, runner.ErrNotFound) {
		return s.whyClosed(ctx, sess.ID, inputID)
	}
	if err == nil {
		s.recordAnswer(ctx, sess, inputID, resp)
	}
	return err
}

// checkAnswerSize refuses an answer whose text is over limit.TextBytes, the
// limit of a prompt, with the sentence the page uses: every surface an
// answer comes from (the page, the inbox, `parley asks`, MCP respond) is
// held to it, and the ask_user relay client reads any answer within it.
func checkAnswerSize(resp runner.Response) error {
	if n := resp.TextBytes(); n > limit.TextBytes {
		return errTooBig(n, limit.TextBytes)
	}
	return nil
}
