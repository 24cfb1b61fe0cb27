package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"parley/mcpapi"
	"parley/runner"
	"parley/store"
)

// MCPHandler is Parley's MCP server on /mcp: the tools of package mcpapi,
// served with the rules of the pages through mcpBackend. ctx bounds its
// resource watchers.
func (s *Server) MCPHandler(ctx context.Context) http.Handler {
	return mcpapi.New(ctx, mcpBackend{s}, s.userByAPIToken, s.log).Handler()
}

// userByAPIToken is the token check of every /mcp request.
func (s *Server) userByAPIToken(ctx context.Context, token string) (mcpapi.User, error) {
	if token == "" || len(token) > 128 {
		return mcpapi.User{}, mcpapi.ErrBadToken
	}
	u, err := s.st.UserByAPIToken(ctx, tokenHash(token))
	if errors.Is(err, store.ErrNotFound) {
		return mcpapi.User{}, mcpapi.ErrBadToken
	}
	if err != nil {
		return mcpapi.User{}, err
	}
	return mcpapi.User{ID: u.ID, Name: u.DisplayName(), Admin: u.IsAdmin}, nil
}

// mcpBackend implements mcpapi.Sessions with the code the page's handlers
// use: the same authorization (authorizeSessionFor, checkAccess), the same
// start, prompt, answer and stop.
type mcpBackend struct{ s *Server }

func viewerOf(u mcpapi.User) viewer { return viewer{ID: u.ID, Name: u.Name, Admin: u.Admin} }

// mcpError turns the page's refusals into the client's.
func mcpError(err error) error {
	var he *httpError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNotFound):
		return mcpapi.ErrNotFound
	case errors.As(err, &he):
		return &mcpapi.Error{Msg: he.msg}
	}
	var ae *mcpapi.Error
	if errors.As(err, &ae) {
		return err
	}
	var re *runner.AnswerError
	if errors.As(err, &re) {
		return &mcpapi.Error{Msg: re.Error()} // an answer that does not fit its ask
	}
	return err
}

// findProject returns the project named (by id or name) that u may do act
// in, and u's role there.
func (b mcpBackend) findProject(ctx context.Context, u mcpapi.User, name string, act action) (store.Project, string, error) {
	list, err := b.s.st.ProjectsFor(ctx, u.ID, u.Admin)
	if err != nil {
		return store.Project{}, "", err
	}
	name = strings.TrimSpace(name)
	for _, p := range list {
		if strconv.FormatInt(p.ID, 10) == name || strings.EqualFold(p.Name, name) {
			role, err := b.s.checkAccess(ctx, viewerOf(u), p.ID, act)
			if err != nil {
				return store.Project{}, role, mcpError(err)
			}
			return p.Project, role, nil
		}
	}
	return store.Project{}, "", mcpapi.FieldError("project", "no project %q among yours", name)
}

func (b mcpBackend) CreateSession(ctx context.Context, u mcpapi.User, in mcpapi.CreateSessionInput) (mcpapi.CreateSessionOutput, error) {
	p, role, err := b.findProject(ctx, u, in.Project, actPrompt)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	ms, err := b.s.st.ProjectMCPSettings(ctx, p.ID)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	opts, err := checkSessionOptions(p.ProjectSettings, ms, role == roleOwner || u.Admin, in)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, err
	}
	text, err := checkPrompt(in.Prompt)
	if err != nil {
		return mcpapi.CreateSessionOutput{}, mcpapi.FieldError("prompt", "%s", mcpError(err).Error())
	}
	sess, err := b.s.beginSession(ctx, p, viewerOf(u), text, &opts)
	if err != nil {
		return mcpapi.CreateSessionOutput{SessionID: sess.ID}, mcpError(err)
	}
	return mcpapi.CreateSessionOutput{SessionID: sess.ID, Status: "running"}, nil
}

func (b mcpBackend) SendMessage(ctx context.Context, u mcpapi.User, in mcpapi.SendMessageInput) (mcpapi.SendMessageOutput, error) {
	text, err := checkPrompt(in.Message)
	if err != nil {
		return mcpapi.SendMessageOutput{}, mcpapi.FieldError("message", "%s", mcpError(err).Error())
	}
	v := viewerOf(u)
	sess, err := b.s.authorizeSessionFor(ctx, v, in.SessionID, actPrompt)
	adopted := false
	if errors.Is(err, errNotFound) {
		// Not a Parley session: perhaps a Claude Code session on disk.
		sess, err = b.adopt(ctx, u, in.SessionID)
		adopted = err == nil
	}
	if err != nil {
		return mcpapi.SendMessageOutput{}, mcpError(err)
	}
	if err := b.s.allowPrompt(v.ID); err != nil {
		return mcpapi.SendMessageOutput{}, mcpError(err)
	}
	if err := b.s.prompt(ctx, sess, text, v.author()); err != nil {
		return mcpapi.SendMessageOutput{}, mcpError(err)
	}
	return mcpapi.SendMessageOutput{SessionID: sess.ID, Status: "running", Adopted: adopted}, nil
}

func (b mcpBackend) Interrupt(ctx context.Context, u mcpapi.User, id string) error {
	sess, err := b.s.authorizeSessionFor(ctx, viewerOf(u), id, actStop)
	if err != nil {
		return mcpError(err)
	}
	return mcpError(b.s.stopTurn(ctx, sess, u.Name))
}

func (b mcpBackend) Respond(ctx context.Context, u mcpapi.User, in mcpapi.RespondInput) error {
	sess, err := b.s.authorizeSessionFor(ctx, viewerOf(u), in.SessionID, actAnswer)
	if err != nil {
		return mcpError(err)
	}
	ask, err := b.s.st.GetInput(ctx, in.InputID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && ask.SessionID != sess.ID) {
		return mcpapi.FieldError("inputId", "no such input in this session")
	}
	if err != nil {
		return err
	}
	if ask.Status != "pending" {
		return mcpError(b.s.whyClosed(ctx, sess.ID, ask.ID))
	}
	resp, err := responseOf(ask, in)
	if err != nil {
		return err
	}
	resp.By, resp.ByID = u.Name, u.ID
	return mcpError(b.s.deliverAnswer(ctx, sess, ask.ID, resp))
}

// Watch reports each event of the session's log as the hub delivers it.
func (b mcpBackend) Watch(ctx context.Context, u mcpapi.User, id string) (<-chan struct{}, error) {
	if _, err := b.s.authorizeSessionFor(ctx, viewerOf(u), id, actView); err != nil {
		return nil, mcpError(err)
	}
	sub, err := b.s.hub.Subscribe(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer b.s.hub.Unsubscribe(sub)
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
