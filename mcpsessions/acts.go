package mcpsessions

import (
	"context"
	"errors"

	"parley/act"
	"parley/mcpapi"
	"parley/store"
)

// CreateSession starts a session in a project where u may prompt, with
// the options the project lets u pick.
func (b *Backend) CreateSession(ctx context.Context, u mcpapi.User, in mcpapi.CreateSessionInput) (mcpapi.CreateSessionOutput, error) {
	p, role, err := b.findProject(ctx, u, in.Project, act.Prompt)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	ms, err := b.st.ProjectMCPSettings(ctx, p.ID)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	opts, err := checkSessionOptions(p.ProjectSettings, ms, role == act.RoleOwner || u.Admin, in)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	text, err := b.acts.CheckText(in.Prompt)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, mcpapi.FieldError("prompt", "%s", mcpError(err).Error())
	}
	sess, err := b.acts.Create(ctx, actorOf(u), p, text, &opts)
	if err != nil {
		return mcpapi.CreateSessionOutput{SessionID: sess.ID}, mcpError(err)
	}
	return mcpapi.CreateSessionOutput{SessionID: sess.ID, Status: "running"}, nil
}

// SendMessage prompts a session, adopting a Claude Code session on disk
// first if the id is one.
func (b *Backend) SendMessage(ctx context.Context, u mcpapi.User, in mcpapi.SendMessageInput) (mcpapi.SendMessageOutput, error) {
	text, err := b.acts.CheckText(in.Message)
	if err != nil {
		return mcpapi.SendMessageOutput{}, mcpapi.FieldError("message", "%s", mcpError(err).Error())
	}
	a := actorOf(u)
	id, adopted := in.SessionID, false
	_, err = b.acts.Session(ctx, a, id, act.Prompt)
	if errors.Is(err, act.ErrNotFound) {
		// Not a Parley session: perhaps a Claude Code session on disk.
		var sess store.Session
		sess, err = b.adopt(ctx, u, in.SessionID)
		id, adopted = sess.ID, err == nil
	}
	if err != nil {
		return mcpapi.SendMessageOutput{}, mcpError(err)
	}
	sess, err := b.acts.Prompt(ctx, a, id, text)
	if err != nil {
		return mcpapi.SendMessageOutput{}, mcpError(err)
	}
	return mcpapi.SendMessageOutput{SessionID: sess.ID, Status: "running", Adopted: adopted}, nil
}

// Interrupt stops the session's turn.
func (b *Backend) Interrupt(ctx context.Context, u mcpapi.User, id string) error {
	return mcpError(b.acts.Stop(ctx, actorOf(u), id))
}

// Respond answers a pending ask of the session as the page would for the
// same choice.
func (b *Backend) Respond(ctx context.Context, u mcpapi.User, in mcpapi.RespondInput) error {
	a := actorOf(u)
	sess, err := b.acts.Session(ctx, a, in.SessionID, act.Answer)
	if err != nil {
		return mcpError(err)
	}
	ask, err := b.st.GetInput(ctx, in.InputID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ask.SessionID != sess.ID) {
		return mcpapi.FieldError("inputId", "no such input in this session")
	}
	if err != nil {
		return err
	}
	if ask.Status != "pending" {
		return mcpError(b.acts.WhyClosed(ctx, sess.ID, ask.ID))
	}
	resp, err := responseOf(ask, in)
	if err != nil {
		return err
	}
	return mcpError(b.acts.Answer(ctx, a, sess.ID, ask.ID, resp))
}

// Watch reports each event of the session's log as the hub delivers it.
func (b *Backend) Watch(ctx context.Context, u mcpapi.User, id string) (<-chan struct{}, error) {
	if _, err := b.acts.Session(ctx, actorOf(u), id, act.View); err != nil {
		return nil, mcpError(err)
	}
	sub, err := b.hub.Subscribe(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer b.hub.Unsubscribe(sub)
		for {
			select {
			case <-ctx.Done():
				return
			case f, ok := <-sub.C:
				if !ok {
					return // dropped for being slow, or the hub stopped
				}
				if f.Seq == 0 {
					continue // presence and the like: not the session's log
				}
				select {
				case out <- struct{}{}:
				default: // one unread change is as good as many
				}
			}
		}
	}()
	return out, nil
}
