package mcpsessions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"parley/act"
	"parley/askuser"
	"parley/gateway"
	"parley/limit"
	"parley/mcpapi"
	"parley/runner"
	"parley/store"
)

// checkSessionOptions checks create_session's options against the project:
// anything the project forbids is refused with the field named, never
// silently widened. owner is true for the project's owners and admins, who
// may pick any permission mode and model and add to the system prompt; a
// member may pick only a model the project's pin allows (the gateway's
// rule, gateway.ModelAllowed, which refuses any other at the model API
// too) and may not add to the system prompt, which is the owners'
// instructions to every run.
func checkSessionOptions(p store.ProjectSettings, ms store.MCPSettings, owner bool, in mcpapi.CreateSessionInput) (store.SessionOptions, error) {
	o := store.SessionOptions{Model: strings.TrimSpace(in.Model), PermissionMode: in.PermissionMode,
		AllowedTools: in.AllowedTools, DisallowedTools: in.DisallowedTools, MaxTurns: in.MaxTurns, SystemPrompt: in.SystemPrompt}
	if o.Model != "" && !act.ModelName.MatchString(o.Model) {
		return o, mcpapi.FieldError("model", "%q is not a model name", o.Model)
	}
	if !owner && o.Model != "" && !gateway.ModelAllowed(p.Model, o.Model) {
		return o, mcpapi.FieldError("model", "members of this project may pick only %s, not %q; an owner can change the project's model",
			gateway.AllowedModels(p.Model), o.Model)
	}
	if !owner && o.SystemPrompt != "" {
		return o, mcpapi.FieldError("systemPrompt", "only the project's owners may add to the system prompt; an owner can set the project's instructions")
	}
	if o.PermissionMode != "" {
		if !slices.Contains(act.PermissionModes, o.PermissionMode) {
			return o, mcpapi.FieldError("permissionMode", "must be one of %s, not %q", strings.Join(act.PermissionModes, ", "), o.PermissionMode)
		}
		if !owner && !slices.Contains(ms.MemberPermissionModes, o.PermissionMode) {
			return o, mcpapi.FieldError("permissionMode", "%q is not allowed to members of this project (allowed: %s); an owner can allow it in the project's settings",
				o.PermissionMode, strings.Join(ms.MemberPermissionModes, ", "))
		}
	}
	for _, t := range o.AllowedTools {
		if !act.ToolName.MatchString(t) {
			return o, mcpapi.FieldError("allowedTools", "%q is not a tool name (like Read, Bash(git log:*) or mcp__server__tool)", t)
		}
		if slices.Contains(p.DisallowedTools, t) {
			return o, mcpapi.FieldError("allowedTools", "%q is disallowed in this project", t)
		}
		// Allowing a tool without asking widens what the session may do: a
		// member may name only tools the project allows already, unless the
		// owners trust members with bypassPermissions.
		if !owner && !slices.Contains(p.AllowedTools, t) && !slices.Contains(ms.MemberPermissionModes, "bypassPermissions") {
			return o, mcpapi.FieldError("allowedTools", "members of this project may not allow %q without asking (the project allows: %s); an owner can add it to the project's allowed tools",
				t, strings.Join(p.AllowedTools, ", "))
		}
	}
	for _, t := range o.DisallowedTools {
		if !act.ToolName.MatchString(t) {
			return o, mcpapi.FieldError("disallowedTools", "%q is not a tool name (like Read, Bash(git log:*) or mcp__server__tool)", t)
		}
	}
	if p.MaxTurns > 0 && o.MaxTurns > p.MaxTurns {
		return o, mcpapi.FieldError("maxTurns", "at most %d in this project", p.MaxTurns)
	}
	if len(o.SystemPrompt) > limit.TextBytes {
		return o, mcpapi.FieldError("systemPrompt", "too long (the limit is 256 KB)")
	}
	return o, nil
}

// responseOf turns respond's arguments into the response the page would
// send for the same choice.
func responseOf(in store.Input, r mcpapi.RespondInput) (runner.Response, error) {
	var p runner.AskPayload
	if err := json.Unmarshal(in.Payload, &p); err != nil {
		return runner.Response{}, fmt.Errorf("decode ask %s: %w", in.ID, err)
	}
	if r.Decision == "deny" {
		return runner.Response{Decline: true, Reason: strings.TrimSpace(r.Reason)}, nil
	}
	var resp runner.Response
	for k, v := range r.UpdatedInput {
		switch {
		case k == "command" && in.Kind == runner.KindPermission && p.ToolName == "Bash":
			cmd, ok := v.(string)
			if !ok {
				return resp, mcpapi.FieldError("updatedInput.command", "must be a string")
			}
			resp.Command = &cmd
		case k == "mode" && in.Kind == runner.KindPlan:
			resp.Mode, _ = v.(string)
		default:
			return resp, mcpapi.FieldError("updatedInput."+k, "cannot be changed for this input (only a Bash permission's command, or a plan's mode)")
		}
	}
	if in.Kind == runner.KindQuestion {
		replies, err := repliesOf(p.TheForm(), r.Answers)
		if err != nil {
			return resp, err
		}
		resp.Replies = replies
	} else if len(r.Answers) > 0 {
		return resp, mcpapi.FieldError("answers", "only questions take answers; this input is a %s", in.Kind)
	}
	return resp, nil
}

// repliesOf reads answers keyed by question text, header or index: an
// option label, a list of labels, or free text.
func repliesOf(f askuser.Form, answers map[string]any) ([]askuser.Reply, error) {
	replies := make([]askuser.Reply, len(f.Questions))
	used := 0
	for i, q := range f.Questions {
		v, ok := answers[q.Question]
		if !ok && q.Header != "" {
			v, ok = answers[q.Header]
		}
		if !ok {
			v, ok = answers[strconv.Itoa(i)]
		}
		if !ok {
			continue
		}
		used++
		var vals []string
		switch x := v.(type) {
		case string:
			vals = []string{x}
		case bool:
			vals = []string{map[bool]string{true: "Yes", false: "No"}[x]}
		case []any:
			for _, e := range x {
				sv, ok := e.(string)
				if !ok {
					return nil, mcpapi.FieldError("answers", "the answer to %q must be text or a list of option labels", q.Question)
				}
				vals = append(vals, sv)
			}
		default:
			return nil, mcpapi.FieldError("answers", "the answer to %q must be text or a list of option labels", q.Question)
		}
		for _, val := range vals {
			if slices.ContainsFunc(q.Choices(), func(o askuser.Option) bool { return o.Label == val }) {
				replies[i].Selected = append(replies[i].Selected, val)
			} else {
				replies[i].Text = strings.TrimSpace(strings.TrimSpace(replies[i].Text + " " + val))
			}
		}
	}
	if used < len(answers) {
		return nil, mcpapi.FieldError("answers", "some keys name no question of this input; use the question's text, header or index")
	}
	if err := f.Check(replies); err != nil {
		return nil, mcpapi.FieldError("answers", "%s", err.Error())
	}
	return replies, nil
}
