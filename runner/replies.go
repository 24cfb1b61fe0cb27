package runner

import (
	"encoding/json"
	"fmt"
	"strings"

	"parley/askuser"
)

// controlReply is the body of the control_response that answers a
// can_use_tool request (shared/claude-cli.md): {"behavior":"allow",
// "updatedInput":{…},"updatedPermissions":[…]?} or {"behavior":"deny",
// "message":"why"}. The CLI hands a deny message to the model as the
// tool_result text.
func controlReply(p AskPayload, status askuser.Status, resp Response) map[string]any {
	if status != askuser.StatusAnswered {
		return map[string]any{"behavior": "deny", "message": denyMessage(p, status, resp.Reason)}
	}
	input := inputObject(p.Input)
	if p.Kind == KindPermission && resp.Input != nil {
		// An edited input replaces the whole input; checkEditedInput made
		// sure it is a JSON object.
		input = inputObject(resp.Input)
	}
	body := map[string]any{"behavior": "allow", "updatedInput": input}
	switch p.Kind {
	case KindPermission:
		if resp.Command != nil {
			// "updatedInput may change the input (the changed command runs)".
			input["command"] = *resp.Command
		}
		if resp.AllowAlways {
			if perms := sessionSuggestions(p.Suggestions); len(perms) > 0 {
				body["updatedPermissions"] = perms
			}
		}
	case KindPlan:
		// Measured: allow switches the CLI to "default"; a setMode update
		// in the same response switches it to acceptEdits instead.
		if resp.Mode == "acceptEdits" {
			body["updatedPermissions"] = []any{map[string]any{"type": "setMode", "mode": "acceptEdits", "destination": "session"}}
		}
	case KindQuestion:
		// AskUserQuestion reads answers keyed by the exact question text;
		// several labels are joined with ", " and free text goes in the
		// same string.
		answers := map[string]string{}
		for i, q := range p.TheForm().Questions {
			if i < len(resp.Replies) {
				answers[q.Question] = claudeAnswer(resp.Replies[i])
			}
		}
		input["answers"] = answers
	}
	return body
}

// inputObject decodes a tool input, or returns an empty object.
func inputObject(raw json.RawMessage) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	return m
}

func claudeAnswer(r askuser.Reply) string {
	parts := append([]string{}, r.Selected...)
	if t := strings.TrimSpace(r.Text); t != "" {
		parts = append(parts, t)
	}
	return strings.Join(parts, ", ")
}

// sessionSuggestions keeps the rule and directory suggestions of a
// permission request, scoped to this session: "don't ask again in this
// session" must not write the workspace's settings files (the CLI suggests
// destination "localSettings") nor change the permission mode.
func sessionSuggestions(raw json.RawMessage) []map[string]any {
	var list []map[string]any
	_ = json.Unmarshal(raw, &list)
	var out []map[string]any
	for _, s := range list {
		switch s["type"] {
		case "addRules", "replaceRules", "addDirectories":
			s["destination"] = "session"
			out = append(out, s)
		}
	}
	return out
}

// denyMessage is what the model reads when an ask ends without approval.
func denyMessage(p AskPayload, status askuser.Status, reason string) string {
	reason = strings.TrimSpace(reason)
	switch status {
	case askuser.StatusTimedOut:
		return timedOutMessage(p)
	case askuser.StatusCancelled:
		if reason == "" {
			reason = "the run was stopped"
		}
		return "The request was cancelled before anyone answered: " + strings.TrimRight(reason, ".") + "."
	}
	switch p.Kind {
	case KindPlan:
		if reason == "" {
			return "The user did not approve the plan and gave no feedback. Stay in plan mode, rethink the plan and present it again with ExitPlanMode."
		}
		return "The user asked for changes to the plan: " + quote(reason) + ". Stay in plan mode, revise the plan accordingly and present it again with ExitPlanMode."
	case KindQuestion:
		return askuser.DeclinedText(reason)
	}
	msg := "The user denied permission to use " + p.ToolName + ", so the call did not run."
	if reason != "" {
		msg += " Their reason: " + quote(reason) + "."
	}
	return msg + " Do not retry the same call; adapt your approach or ask the user."
}

func timedOutMessage(p AskPayload) string {
	wait := fmt.Sprintf("%d seconds", p.TimeoutSeconds)
	switch p.Kind {
	case KindPlan:
		return "Time ran out: nobody reviewed the plan within " + wait + ", so it was not approved. Stay in plan mode and wait for the user's next message."
	case KindQuestion:
		return "Time ran out: nobody answered within " + wait + ". Proceed with your best judgment."
	}
	return "Time ran out: nobody answered the request to use " + p.ToolName + " within " + wait + ", so it was denied and did not run."
}

func quote(s string) string { return "\u201c" + s + "\u201d" }

// LateAnswerText is the user turn that delivers an answer to an ask whose
// Claude process ended before it was answered. It quotes the ask, so the
// model knows what the answer is about.
func LateAnswerText(p AskPayload, status askuser.Status, resp Response) string {
	var b strings.Builder
	b.WriteString("[Parley] Your session was interrupted (the Claude process ended) while you were waiting for the user. ")
	switch p.Kind {
	case KindQuestion:
		f := p.TheForm()
		b.WriteString("You asked:\n")
		for _, q := range f.Questions {
			b.WriteString("> " + q.Question + "\n")
		}
		b.WriteString("\nThe user's answer (from " + orSomeone(resp.By) + "):\n")
		if status == askuser.StatusDeclined {
			b.WriteString(askuser.DeclinedText(resp.Reason))
		} else {
			b.WriteString(askuser.AnsweredText(f, resp.Replies))
		}
	case KindPlan:
		b.WriteString("You presented a plan for approval")
		if p.Plan != "" {
			b.WriteString(":\n> " + strings.ReplaceAll(strings.TrimSpace(clipText(p.Plan, 2000)), "\n", "\n> ") + "\n\n")
		} else {
			b.WriteString(". ")
		}
		if status == askuser.StatusDeclined {
			b.WriteString(orSomeone(resp.By) + " did not approve it: " + denyMessage(p, status, resp.Reason))
		} else {
			b.WriteString(orSomeone(resp.By) + " approved the plan. Proceed with it.")
		}
	default:
		fmt.Fprintf(&b, "You asked for permission to use %s with this input:\n> %s\n\n", p.ToolName, clipText(string(p.Input), 2000))
		if status == askuser.StatusDeclined {
			b.WriteString(denyMessage(p, status, resp.Reason))
		} else {
			if resp.Input != nil {
				fmt.Fprintf(&b, "%s allowed it with the input changed to:\n> %s\n\n", orSomeone(resp.By), clipText(string(resp.Input), 2000))
				b.WriteString("The call did not run because the process had ended. Run it again with that input if it is still needed.")
			} else {
				b.WriteString(orSomeone(resp.By) + " allowed it, but the call did not run because the process had ended. Run it again if it is still needed.")
			}
		}
	}
	return b.String()
}

func orSomeone(by string) string {
	if by == "" {
		return "a member"
	}
	return by
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
