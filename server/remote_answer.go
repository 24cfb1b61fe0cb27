package server

import (
	"context"
	"encoding/json"
	"errors"

	"parley/audit"
	"parley/runner"
	"parley/store"
)

// ListenAnswers applies the answers people send from a terminal (`parley
// asks answer`, which NOTIFYs them through Postgres) until ctx ends. Each
// goes through the same path as an answer from a page: the same access
// check, and the supervisor's exactly-once resolution, so it reaches the
// live claude process or resumes the session, through the cluster on the
// replica that owns the session. Every replica listens, and the command
// names the one to apply it: the session's owner, else any live replica
// (store.RequestAnswer); the exactly-once resolution still holds.
func (s *Server) ListenAnswers(ctx context.Context) error {
	s.st.ListenAnswers(ctx, s.remoteAnswer, func(err error) { s.log.Error("answers from terminals", "err", err) })
	return nil
}

// remoteAnswer applies one answer from a terminal.
func (s *Server) remoteAnswer(ctx context.Context, req store.AnswerRequest) store.AnswerResult {
	fail := func(msg string) store.AnswerResult { return store.AnswerResult{Message: msg} }
	u, err := s.st.UserByID(ctx, req.UserID)
	if err != nil {
		return fail("Your account was not found.")
	}
	v := viewer{ID: u.ID, Name: u.DisplayName(), Email: u.Email, Admin: u.IsAdmin}
	in, err := s.st.GetInput(ctx, req.InputID)
	if err != nil {
		return fail("There is no ask with that id.")
	}
	sess, err := s.st.GetSession(ctx, in.SessionID)
	if err != nil {
		return fail("There is no ask with that id.")
	}
	if _, err := s.checkAccess(ctx, v, sess.ProjectID, actAnswer); err != nil {
		if errors.Is(err, errNotFound) {
			return fail("There is no ask with that id.")
		}
		return fail(userMessage(err))
	}
	if err := checkNoNUL(req.Response); err != nil {
		return fail(userMessage(err))
	}
	var resp runner.Response
	if err := json.Unmarshal(req.Response, &resp); err != nil {
		return fail("Parley could not read that answer.")
	}
	if err := s.refuseArchived(ctx, sess.ID); err != nil {
		return fail(userMessage(err))
	}
	if err := checkAnswerSize(resp); err != nil {
		return fail(userMessage(err))
	}
	resp.By, resp.ByID = v.Name, v.ID
	err = s.runs.Answer(ctx, sess.ID, s.starter(sess), in.ID, resp)
	if errors.Is(err, runner.ErrRunEnded) || errors.Is(err, runner.ErrNotPending) || errors.Is(err, runner.ErrNotFound) {
		err = s.whyClosed(ctx, sess.ID, in.ID)
	}
	if err != nil {
		var he *httpError
		var ae *runner.AnswerError
		if !errors.As(err, &he) && !errors.As(err, &ae) {
			s.log.Error("answer from a terminal", "input_id", in.ID, "user_id", u.ID, "err", err)
		}
		return fail(userMessage(err))
	}
	s.recordAnswer(audit.WithSource(ctx, audit.Source{Surface: audit.Terminal}), sess, in.ID, resp)
	s.log.Info("ask answered from a terminal", "input_id", in.ID, "session_id", sess.ID, "user_id", u.ID)
	return store.AnswerResult{OK: true, SessionID: sess.ID, Message: "Answered in session “" + sess.Title + "”."}
}
