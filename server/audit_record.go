package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"parley/act"
	"parley/audit"
	"parley/runner"
	"parley/store"
)

// auditWriteTimeout bounds one audit write, apart from its request: a
// client that goes away does not cancel the row of what it did.
const auditWriteTimeout = 5 * time.Second

// auditLog is the audit trail in the server's store.
func (s *Server) auditLog() *audit.Log { return audit.New(s.st) }

// record appends e to the audit trail, filling in the signed-in viewer,
// the client address and the page as surface where e leaves them empty.
// A failed write is logged, never returned: it does not block the action.
func (s *Server) record(r *http.Request, e audit.Entry) {
	if v := s.viewer(r); e.ActorID == 0 && e.ActorName == "" {
		e.ActorID, e.ActorName = v.ID, v.Name
	}
	if e.From == "" {
		e.From = clientIP(r)
	}
	if e.Surface == "" {
		e.Surface = audit.Page
	}
	s.recordCtx(r.Context(), e)
}

// signInFailed is a refused sign-in: no account acts, the email tried is
// named.
func signInFailed(email, reason string) audit.Entry {
	return audit.Entry{ActorName: email, Action: audit.SignInFailed, Target: email, Detail: map[string]any{"reason": reason}}
}

// recordOK records e when the action it describes succeeded (err is nil).
func (s *Server) recordOK(err error, r *http.Request, e audit.Entry) {
	if err == nil {
		s.record(r, e)
	}
}

func (s *Server) recordCtx(ctx context.Context, e audit.Entry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	if err := s.auditLog().Record(ctx, e); err != nil {
		s.log.Error("audit trail: the action went ahead unrecorded", "action", e.Action, "err", err)
	}
}

// recordAnswer records an ask's answer with the surface it came from: the
// Source its context carries (page, inbox, MCP, terminal), or for package
// reach's answers the surface its Via names (Slack, e-mail, a push device).
func (s *Server) recordAnswer(ctx context.Context, sess store.Session, inputID string, resp runner.Response) {
	src, ok := audit.SourceOf(ctx)
	if via := audit.SurfaceOfVia(resp.Via); via != "" {
		src.Surface = via
	} else if !ok {
		src.Surface = audit.System // no surface said where it came from
	}
	e := audit.Entry{ActorID: resp.ByID, ActorName: resp.By, From: src.From, Surface: src.Surface, Action: audit.AskAnswer,
		ProjectID: sess.ProjectID, SessionID: sess.ID, Target: inputID, Detail: answerDetail(resp)}
	if resp.AllowAlways {
		e.Action = audit.AllowAlways
	}
	if in, err := s.st.GetInput(ctx, inputID); err == nil {
		askDetail(e.Detail, in.Kind, in.Payload, resp.AllowAlways)
	}
	s.recordCtx(ctx, e)
}

// maxAuditInput is the largest tool input copied into an answer's row
// (a Bash command is); a larger one (a file's content) is named by size.
const maxAuditInput = 4 << 10

// askDetail adds what was asked to an answer's detail: the kind, the tool
// and its input (what was approved), and for Allow always the rules the
// tool asked to add.
func askDetail(d map[string]any, kind string, payload []byte, always bool) {
	var p runner.AskPayload
	_ = json.Unmarshal(payload, &p)
	d["kind"], d["tool"] = kind, p.ToolName
	if n := len(p.Input); n > maxAuditInput {
		d["input_bytes"] = n
	} else if n > 0 {
		d["input"] = p.Input
	}
	if always && len(p.Suggestions) > 0 && len(p.Suggestions) <= maxAuditInput {
		d["rules"] = p.Suggestions
	}
}

// answerDetail is what an answer decided, for the trail.
func answerDetail(resp runner.Response) map[string]any {
	d := map[string]any{"decision": "allow"}
	switch {
	case len(resp.Replies) > 0:
		d["decision"] = "answer"
	case resp.Decline:
		d["decision"] = "decline"
	case resp.AllowAlways:
		d["decision"] = "allow_always"
	case resp.Command != nil || resp.Input != nil:
		d["decision"] = "allow_edited"
	case resp.Mode != "":
		d["decision"], d["mode"] = "approve", resp.Mode
	}
	if resp.Via != "" {
		d["via"] = resp.Via
	}
	if resp.Command != nil {
		d["command"] = *resp.Command
	}
	return d
}

// mcpActs are the session acts of the MCP tools: answers through them are
// recorded as from MCP.
type mcpActs struct{ sessionActs }

func (a mcpActs) Answer(ctx context.Context, u act.Actor, id, inputID string, resp runner.Response) error {
	return a.sessionActs.Answer(audit.WithSource(ctx, audit.Source{Surface: audit.MCP}), u, id, inputID, resp)
}

// pageSource is the surface of an answer from a page's socket: the
// session page names its session, the inbox does not.
func pageSource(r *http.Request, sessionID string) audit.Source {
	if sessionID == "" {
		return audit.Source{Surface: audit.Inbox, From: clientIP(r)}
	}
	return audit.Source{Surface: audit.Page, From: clientIP(r)}
}

// worktreeEntry is a worktree merge or discard for the trail.
func worktreeEntry(sess store.Session, wt store.SessionWorktree, done string) audit.Entry {
	e := audit.Entry{Action: audit.WorktreeMerge, ProjectID: sess.ProjectID, SessionID: sess.ID, Target: wt.Branch,
		Detail: map[string]any{"outcome": done}}
	if done == "discarded" {
		e.Action = audit.WorktreeDiscard
	}
	return e
}
