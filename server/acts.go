package server

import (
	"context"
	"net/http"

	"parley/act"
	"parley/runner"
	"parley/store"
)

// sessionActs is the act.Service of the pages and the MCP tools: the same
// authorization (authorizeSessionFor, checkAccess), the same start, prompt,
// answer and stop.
type sessionActs struct{ s *Server }

// acts is the service the page handlers and the MCP backend act through.
func (s *Server) acts() sessionActs { return sessionActs{s} }

// actorOf is the viewer as the service names who acts.
func actorOf(v viewer) act.Actor { return act.Actor{ID: v.ID, Name: v.Name, Admin: v.Admin} }

func viewerOfActor(a act.Actor) viewer { return viewer{ID: a.ID, Name: a.Name, Admin: a.Admin} }

// actor is the signed-in user of r, read afresh from the sign-in cookie.
func (s *Server) actor(ctx context.Context, r *http.Request) (act.Actor, error) {
	v, err := s.lookupViewer(ctx, r)
	if err != nil {
		return act.Actor{}, err
	}
	if !v.signedIn() {
		return act.Actor{}, errSignedOut
	}
	return actorOf(v), nil
}

// actionOf is the page's action for the service's.
func actionOf(what act.Action) action {
	switch what {
	case act.Prompt:
		return actPrompt
	case act.Answer:
		return actAnswer
	case act.Stop:
		return actStop
	}
	return actView
}

// Is makes errNotFound match act.ErrNotFound.
func (e *httpError) Is(target error) bool {
	return target == act.ErrNotFound && e.status == http.StatusNotFound
}

// Refusal is the sentence the user sees (act.Refusal).
func (e *httpError) Refusal() string { return e.msg }

func (a sessionActs) Access(ctx context.Context, u act.Actor, projectID int64, what act.Action) (string, error) {
	if err := a.s.actorActive(ctx, u.ID); err != nil { // account.go: push, e-mail and Slack answers too
		return "", err
	}
	return a.s.checkAccess(ctx, viewerOfActor(u), projectID, actionOf(what))
}

func (a sessionActs) Session(ctx context.Context, u act.Actor, id string, what act.Action) (store.Session, error) {
	if err := a.s.actorActive(ctx, u.ID); err != nil { // account.go
		return store.Session{}, err
	}
	return a.s.authorizeSessionFor(ctx, viewerOfActor(u), id, actionOf(what))
}

func (a sessionActs) CheckText(text string) (string, error) { return checkPrompt(text) }

func (a sessionActs) Create(ctx context.Context, u act.Actor, p store.Project, text string, opts *store.SessionOptions) (store.Session, error) {
	if _, err := a.Access(ctx, u, p.ID, act.Prompt); err != nil {
		return store.Session{}, err
	}
	text, err := checkPrompt(text)
	if err != nil {
		return store.Session{}, err
	}
	if text, err = a.s.firstPrompt(p, text); err != nil { // slash.go
		return store.Session{}, err
	}
	return a.s.beginSession(ctx, p, viewerOfActor(u), text, opts)
}

func (a sessionActs) Prompt(ctx context.Context, u act.Actor, id, text string) (store.Session, error) {
	sess, err := a.Session(ctx, u, id, act.Prompt)
	if err != nil {
		return sess, err
	}
	if text, err = checkPrompt(text); err != nil {
		return sess, err
	}
	if done, err := a.s.typedSwitch(ctx, u, sess, text); done { // "/model NAME" (modeswitch.go)
		return sess, err
	}
	if err := a.s.allowPrompt(u.ID); err != nil {
		return sess, err
	}
	return sess, a.s.prompt(ctx, sess, a.s.expandCommand(ctx, sess, text), u.Author())
}

func (a sessionActs) Answer(ctx context.Context, u act.Actor, id, inputID string, resp runner.Response) error {
	sess, err := a.Session(ctx, u, id, act.Answer)
	if err != nil {
		return err
	}
	resp.By, resp.ByID = u.Name, u.ID
	return a.s.deliverAnswer(ctx, sess, inputID, resp)
}

func (a sessionActs) Stop(ctx context.Context, u act.Actor, id string) error {
	sess, err := a.Session(ctx, u, id, act.Stop)
	if err != nil {
		return err
	}
	return a.s.stopTurn(ctx, sess, u.Name)
}

func (a sessionActs) WhyClosed(ctx context.Context, sessionID, inputID string) error {
	return a.s.whyClosed(ctx, sessionID, inputID)
}

var _ act.Service = sessionActs{}
