package asks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"parley/askuser"
	"parley/mcpapi"
	"parley/runner"
)

// Token is a [Client] that works through Parley's MCP interface (/mcp)
// with a personal API token, as `parley mcp` does: list_sessions and
// get_status find the open asks, respond answers one. The server applies
// the answer on the page's path, so what the token's user may do is what
// they may do in the browser.
type Token struct {
	cs *mcp.ClientSession
}

// NewToken connects to the server at baseURL (e.g. http://127.0.0.1:8080)
// with token. Close the returned client when done.
func NewToken(ctx context.Context, baseURL, token string) (*Token, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-asks", Version: "1.0.0"}, nil)
	url := strings.TrimSuffix(baseURL, "/") + "/mcp"
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: mcpapi.BearerClient(token), MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s (is PARLEY_URL right, and PARLEY_TOKEN valid?): %w", url, err)
	}
	return &Token{cs: cs}, nil
}

// Close ends the MCP session.
func (t *Token) Close() error { return t.cs.Close() }

// The shapes of the MCP tools' results that this client reads.
type (
	sessionList struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
			Source    string `json:"source"`
		} `json:"sessions"`
	}
	sessionStatus struct {
		SessionID     string `json:"sessionId"`
		Project       string `json:"project"`
		Title         string `json:"title"`
		PendingInputs []struct {
			InputID     string         `json:"inputId"`
			Type        string         `json:"type"`
			ToolName    string         `json:"toolName"`
			ToolInput   map[string]any `json:"toolInput"`
			Description string         `json:"description"`
			Questions   []struct {
				Question    string   `json:"question"`
				Header      string   `json:"header"`
				Options     []string `json:"options"`
				MultiSelect bool     `json:"multiSelect"`
				Optional    bool     `json:"optional"`
			} `json:"questions"`
		} `json:"pendingInputs"`
	}
)

// call calls a tool and decodes its structured result into out.
func (t *Token) call(ctx context.Context, name string, args, out any) error {
	res, err := t.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, tc.Text)
			}
		}
		return errors.New(strings.Join(texts, " "))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return json.Unmarshal(b, out)
}

// planPrefix starts a plan_review's description.
const planPrefix = "Claude asks to approve its plan:\n\n"

// Open implements [Client]: the pending inputs of every session that may
// have some (running or waiting for input).
func (t *Token) Open(ctx context.Context) ([]Ask, error) {
	var list sessionList
	if err := t.call(ctx, "list_sessions", map[string]any{"limit": 500}, &list); err != nil {
		return nil, err
	}
	var out []Ask
	for _, s := range list.Sessions {
		if s.Source != "parley" || (s.Status != "running" && s.Status != "waiting_for_input") {
			continue
		}
		var st sessionStatus
		if err := t.call(ctx, "get_status", map[string]any{"sessionId": s.SessionID, "outputLines": 1}, &st); err != nil {
			return nil, err
		}
		for _, pi := range st.PendingInputs {
			a := Ask{ID: pi.InputID, Project: st.Project, SessionID: st.SessionID, Session: st.Title}
			a.InputID, a.ToolName = pi.InputID, pi.ToolName
			if pi.ToolInput != nil {
				a.Input, _ = json.Marshal(pi.ToolInput)
			}
			switch pi.Type {
			case "permission":
				a.Kind = runner.KindPermission
			case "plan_review":
				a.Kind, a.Plan = runner.KindPlan, strings.TrimPrefix(pi.Description, planPrefix)
			default:
				a.Kind = runner.KindQuestion
				f := askuser.Form{}
				for _, q := range pi.Questions {
					aq := askuser.Question{Question: q.Question, Header: q.Header, MultiSelect: q.MultiSelect, Optional: q.Optional}
					for _, o := range q.Options {
						aq.Options = append(aq.Options, askuser.Option{Label: o})
					}
					f.Questions = append(f.Questions, aq)
				}
				a.Form = &f
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// Answer implements [Client] with the respond tool. Its contract is
// narrower than the page's: "always" and an edited tool input other than
// a Bash command are refused here.
func (t *Token) Answer(ctx context.Context, id string, resp runner.Response) (string, error) {
	open, err := t.Open(ctx)
	if err != nil {
		return "", err
	}
	var ask *Ask
	for i := range open {
		if open[i].ID == id {
			ask = &open[i]
		}
	}
	if ask == nil {
		return "", errors.New("none of your open asks has that id (answered already, or not yours to answer)")
	}
	args, err := respondArgs(ask.SessionID, id, resp)
	if err != nil {
		return "", err
	}
	var done struct {
		Message string `json:"message"`
	}
	if err := t.call(ctx, "respond", args, &done); err != nil {
		return "", err
	}
	return done.Message, nil
}

// respondArgs maps a response to the respond tool's arguments.
func respondArgs(sessionID, inputID string, resp runner.Response) (map[string]any, error) {
	args := map[string]any{"sessionId": sessionID, "inputId": inputID, "decision": "allow"}
	switch {
	case resp.Decline:
		args["decision"], args["reason"] = "deny", resp.Reason
	case resp.AllowAlways:
		return nil, errors.New("--always is not available with a token: use --allow, or the page")
	case resp.Input != nil:
		return nil, errors.New("--input is not available with a token: use --allow --command for Bash, or the page")
	case resp.Command != nil:
		args["updatedInput"] = map[string]any{"command": *resp.Command}
	case resp.Mode != "":
		args["updatedInput"] = map[string]any{"mode": resp.Mode}
	case len(resp.Replies) > 0:
		answers := map[string]any{}
		for i, r := range resp.Replies {
			vals := append([]string{}, r.Selected...)
			if r.Text != "" {
				vals = append(vals, r.Text)
			}
			if len(vals) > 0 {
				answers[strconv.Itoa(i)] = vals
			}
		}
		args["answers"] = answers
	}
	return args, nil
}
