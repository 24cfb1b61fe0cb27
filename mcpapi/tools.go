package mcpapi

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTools registers the six tools. Their names and shapes follow the
// claude-code-mcp design, adapted to Parley's projects.
func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "create_session", Title: "Start a Claude Code session",
		Description: "Start a Claude Code session in a Parley project with a first prompt. The project's members see it live in Parley's web chat. Options the project does not allow you are refused, never widened."},
		withUser(s, s.createSession))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "send_message", Title: "Send a message to a session",
		Description: "Send the next message to a session: a new turn on its live process, or it resumes the conversation. A Claude Code session found on disk (list_sessions, source disk) is adopted into Parley and resumed."},
		withUser(s, s.sendMessage))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "get_status", Title: "Get a session's status",
		Description: "A session's status (running, waiting_for_input, completed, error, interrupted), its last result, recent output, pending inputs to answer with respond, tools used, cost and turns.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		withUser(s, s.sessions.Status))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "respond", Title: "Answer a pending input",
		Description: "Answer one of a session's pending inputs (a permission, a plan to review, a question). The first answer wins, whether from here or from Parley's page; a later one gets \"already answered\"."},
		withUser(s, s.respond))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "interrupt", Title: "Stop a session's turn",
		Description: "Stop the session's current turn, like Stop in the page. The session stays and takes further messages."},
		withUser(s, s.interrupt))
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_sessions", Title: "List sessions",
		Description: "Sessions of your projects, most recent first: Parley's, and Claude Code sessions found in a project's CLI state that Parley did not start (source disk), which send_message can adopt.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		withUser(s, s.sessions.ListSessions))
}

// withUser adapts a call of Sessions to a tool handler: it finds the
// request's user and turns refusals into tool errors a model can read
// (protocol errors are for protocol faults).
func withUser[In, Out any](s *Server, f func(context.Context, User, In) (Out, error)) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		u, ok := userOf(req.Extra)
		if !ok {
			return errorResult("This request carries no API token."), zero, nil
		}
		ctx = withCaller(ctx, req.Session)
		out, err := f(ctx, u, in)
		if err != nil {
			return s.errorResult(req.Params.Name, err), zero, nil
		}
		return nil, out, nil
	}
}

// errorResult is the tool result for err: its sentence if it is a
// refusal, else a generic one (and a log line).
func (s *Server) errorResult(tool string, err error) *mcp.CallToolResult {
	var e *Error
	if errors.As(err, &e) {
		return errorResult(e.Error())
	}
	if errors.Is(err, context.Canceled) {
		return errorResult("The call was cancelled.")
	}
	s.log.Error("mcp tool failed", "tool", tool, "err", err)
	return errorResult("Parley could not do that; try again, and tell your admin if it keeps failing.")
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func (s *Server) createSession(ctx context.Context, u User, in CreateSessionInput) (CreateSessionOutput, error) {
	switch {
	case strings.TrimSpace(in.Project) == "":
		return CreateSessionOutput{}, FieldError("project", "required: the project's name or id")
	case strings.TrimSpace(in.Prompt) == "":
		return CreateSessionOutput{}, FieldError("prompt", "required: the task for Claude")
	case in.MaxTurns < 0:
		return CreateSessionOutput{}, FieldError("maxTurns", "must not be negative")
	}
	out, err := s.sessions.CreateSession(ctx, u, in)
	if err == nil {
		s.elicit.follow(ctx, u, out.SessionID)
	}
	return out, err
}

func (s *Server) sendMessage(ctx context.Context, u User, in SendMessageInput) (SendMessageOutput, error) {
	if err := needID("sessionId", in.SessionID); err != nil {
		return SendMessageOutput{}, err
	}
	if strings.TrimSpace(in.Message) == "" {
		return SendMessageOutput{}, FieldError("message", "required: the message for Claude")
	}
	return s.sessions.SendMessage(ctx, u, in)
}

func (s *Server) respond(ctx context.Context, u User, in RespondInput) (Done, error) {
	if err := needID("sessionId", in.SessionID); err != nil {
		return Done{}, err
	}
	if err := needID("inputId", in.InputID); err != nil {
		return Done{}, err
	}
	if in.Decision != "allow" && in.Decision != "deny" {
		return Done{}, FieldError("decision", "must be allow or deny, not %q", in.Decision)
	}
	if err := s.sessions.Respond(ctx, u, in); err != nil {
		return Done{}, err
	}
	return Done{OK: true, Message: "Answered; Claude carries on."}, nil
}

func (s *Server) interrupt(ctx context.Context, u User, in InterruptInput) (Done, error) {
	if err := needID("sessionId", in.SessionID); err != nil {
		return Done{}, err
	}
	if err := s.sessions.Interrupt(ctx, u, in.SessionID); err != nil {
		return Done{}, err
	}
	return Done{OK: true, Message: "Stop sent: the current turn ends."}, nil
}

func needID(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return FieldError(field, "required")
	}
	return nil
}

type callerKey struct{}

// withCaller records the MCP session a call came from, for elicitation.
func withCaller(ctx context.Context, ss *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, callerKey{}, ss)
}

func callerOf(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(callerKey{}).(*mcp.ServerSession)
	return ss
}
