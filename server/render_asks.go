package server

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/a-h/templ"

	"parley/askuser"
	"parley/runner"
	"parley/store"
	"parley/views"
)

// askRequested renders an input_requested event: the card of an ask.
func askRequested(e store.Event) []templ.Component {
	return []templ.Component{appendTo(views.AskCard(askView(e.SessionID, e.Payload, false))), views.Status("waiting", true)}
}

// askResolved renders an input_resolved event: the card's outcome.
func askResolved(e store.Event) []templ.Component {
	return []templ.Component{askClosed(e.Payload)}
}

// askDetached renders an input_detached event: the cards say that the
// process that asked has ended and an answer will resume the session.
func askDetached(e store.Event) []templ.Component {
	var p struct {
		InputIDs []string `json:"input_ids"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	out := make([]templ.Component, 0, len(p.InputIDs))
	for _, id := range p.InputIDs {
		out = append(out, views.AskDetached(id))
	}
	return out
}

// askView reads an input_requested payload (or an inputs row's payload)
// into a card.
func askView(sessionID string, payload []byte, detached bool) views.Ask {
	var p runner.AskPayload
	_ = json.Unmarshal(payload, &p)
	if p.Kind == "" {
		p.Kind = runner.KindQuestion
	}
	a := views.Ask{ID: p.InputID, SessionID: sessionID, Kind: p.Kind, Source: p.Source, Detached: detached}
	if p.Deadline != nil {
		a.Deadline = p.Deadline.UTC().Format(time.RFC3339)
	}
	switch p.Kind {
	case runner.KindPermission:
		permissionView(&a, p)
	case runner.KindPlan:
		a.Plan = p.Plan
	default:
		f := p.TheForm()
		a.Title = f.Title
		for _, q := range f.Questions {
			aq := views.AskQuestion{Question: q.Question, Header: q.Header, Type: q.Kind(),
				Optional: q.Optional, Placeholder: q.Placeholder}
			for _, o := range q.Options {
				aq.Options = append(aq.Options, views.AskOption{Label: o.Label, Description: o.Description})
			}
			a.Questions = append(a.Questions, aq)
		}
	}
	return a
}

// permissionView shows a tool's input readably: a Bash command as code, an
// Edit as a diff of old and new text, a Write as its path and a preview.
func permissionView(a *views.Ask, p runner.AskPayload) {
	a.Tool = p.ToolName
	var in toolInput
	_ = json.Unmarshal(p.Input, &in)
	var sugg []json.RawMessage
	_ = json.Unmarshal(p.Suggestions, &sugg)
	a.CanAlways = len(sugg) > 0
	if p.ToolName != "Bash" {
		// Any other tool's input may be edited whole before allowing.
		a.EditInput = prettyJSON(p.Input)
	}
	switch p.ToolName {
	case "Bash":
		a.Command = in.Command
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		t := toolCard(p.ToolUseID, p.ToolName, p.Input)
		a.Path, a.Diff = in.FilePath, t.Diff
		if len(a.Diff) == 0 {
			a.Input = prettyJSON(p.Input)
		}
	default:
		a.Input = prettyJSON(p.Input)
	}
}

// resolution is an input_resolved payload.
type resolution struct {
	InputID    string          `json:"input_id"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	Answer     runner.Response `json:"answer"`
	AnsweredBy string          `json:"answered_by"`
	Reason     string          `json:"reason"`
	Detached   bool            `json:"detached"`
}

// askClosed renders an input_resolved payload.
func askClosed(payload []byte) templ.Component {
	var p resolution
	_ = json.Unmarshal(payload, &p)
	// How the answer reaches Claude is the card's delivery line (delivery.go).
	return views.AskClosed(p.InputID, p.Status, outcome(p))
}

// outcomeText says in a sentence how an ask ended.
func outcomeText(p resolution) string { return outcome(p).String() }

// outcome says how an ask ended, naming who answered apart so that the
// page can say "You" to them alone.
func outcome(p resolution) views.Outcome {
	by := func(lead, rest string) views.Outcome {
		you := "you"
		if lead == "" {
			you = "You"
		} else {
			rest = from(p.Answer.Via) + rest // "Allowed by Ann from Ann's phone" (render_deliveries.go)
		}
		return views.Outcome{Text: lead + orSomeone(p.AnsweredBy) + rest, You: lead + you + rest, ByID: p.Answer.ByID}
	}
	plain := func(text string) views.Outcome { return views.Outcome{Text: text} }
	reason := ""
	if r := strings.TrimSpace(p.Reason); r != "" {
		reason = ": " + r
	}
	switch p.Status {
	case "timed_out":
		switch p.Kind {
		case runner.KindPermission:
			return plain("Time ran out; the request was denied.")
		case runner.KindPlan:
			return plain("Time ran out; the plan was not approved.")
		}
		return plain("Question timed out")
	case "cancelled", "expired":
		noun := "Question"
		if p.Kind == runner.KindPermission || p.Kind == runner.KindPlan {
			noun = "Request"
		}
		return plain(noun + " " + strings.ReplaceAll(p.Status, "_", " ") + reason)
	case "denied":
		switch p.Kind {
		case runner.KindPermission:
			return by("Denied by ", reason)
		case runner.KindPlan:
			return by("Changes requested by ", reason)
		}
		return by("Declined by ", reason)
	}
	switch p.Kind {
	case runner.KindPermission:
		switch {
		case p.Answer.Command != nil:
			return by("Allowed by ", " with the command changed to: "+*p.Answer.Command)
		case p.Answer.Input != nil:
			return by("Allowed by ", " with the input changed to: "+string(p.Answer.Input))
		case p.Answer.AllowAlways:
			return by("Allowed by ", " for the rest of this session")
		}
		return by("Allowed by ", "")
	case runner.KindPlan:
		if p.Answer.Mode == "acceptEdits" {
			return by("Plan approved by ", "; Claude accepts edits without asking")
		}
		return by("Plan approved by ", "; Claude asks before edits")
	}
	if p.AnsweredBy == "" {
		return plain("Answered: " + repliesText(p.Answer.Replies))
	}
	return by("", " answered"+from(p.Answer.Via)+": "+repliesText(p.Answer.Replies))
}

func repliesText(rs []askuser.Reply) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		s := strings.Join(r.Selected, ", ")
		if r.Text != "" {
			if s != "" {
				s += ", "
			}
			s += r.Text
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
