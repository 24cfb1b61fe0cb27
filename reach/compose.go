package reach

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/askuser"
	"parley/runner"
)

// maxBody bounds a message's body: a Web Push payload holds about 4 KB
// once encrypted, and a notification shows a few lines anyway.
const maxBody = 1000

// Ask is what a message is made from.
type Ask struct {
	InputID   string
	SessionID string
	Kind      string
	Payload   runner.AskPayload
	Project   string // the project's name
	Session   string // the session's title
}

// Compose makes the message of ask for one person. base is the URL
// people reach Parley at; canAnswer gives the message its answering
// actions (a viewer's gets Open only).
func Compose(base string, a Ask, canAnswer bool) Message {
	m := Message{Type: TypeAsk, InputID: a.InputID, Kind: a.Kind, Project: a.Project, Session: a.Session,
		URL:   AskURL(base, a.SessionID, a.InputID),
		Title: title(a), Body: clip(body(a.Payload), maxBody)}
	if canAnswer {
		m.Actions = actions(a)
		if m.Answerable() {
			m.AnswerURL = strings.TrimRight(base, "/") + "/reach/answer"
		}
	}
	if len(m.Actions) == 0 || !m.Answerable() {
		m.Actions = []Action{{ID: ActOpen, Title: "Open"}}
	}
	return m
}

// AskURL is the ask on its session's page.
func AskURL(base, sessionID, inputID string) string {
	return strings.TrimRight(base, "/") + "/sessions/" + sessionID + "#ask-" + inputID
}

func title(a Ask) string {
	switch a.Kind {
	case "permission":
		return "Claude wants to use " + nonEmpty(a.Payload.ToolName, "a tool") + " in " + a.Project
	case "plan":
		return "Claude has a plan for you to approve in " + a.Project
	}
	return "Claude asks in " + a.Project
}

func body(p runner.AskPayload) string {
	switch p.Kind {
	case "permission":
		return toolCall(p.ToolName, p.Input)
	case "plan":
		return p.Plan
	}
	var qs []string
	for _, q := range p.TheForm().Questions {
		qs = append(qs, q.Question)
	}
	return strings.Join(qs, "\n")
}

// toolCall shows a tool's input in a line or a few: a Bash command as
// is, other tools' inputs as their fields.
func toolCall(name string, raw json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil {
		return name
	}
	if c, ok := in["command"].(string); ok {
		return c
	}
	var parts []string
	for _, k := range []string{"file_path", "path", "url", "pattern", "description", "prompt"} {
		if v, ok := in[k].(string); ok && v != "" {
			parts = append(parts, v)
		}
	}
	if len(parts) == 0 {
		return name
	}
	return strings.Join(parts, "\n")
}

// actions are the ones a phone can take without the page: Allow/Deny,
// Approve, or the two options of a single-choice question.
func actions(a Ask) []Action {
	switch a.Kind {
	case "permission":
		return []Action{{ID: ActAllow, Title: "Allow"}, {ID: ActDeny, Title: "Deny"}}
	case "plan":
		return []Action{{ID: ActApprove, Title: "Approve"}, {ID: ActOpen, Title: "Open"}}
	}
	if opts, ok := twoOptions(a.Payload.TheForm()); ok {
		return []Action{{ID: ActChoice + "0", Title: opts[0].Label}, {ID: ActChoice + "1", Title: opts[1].Label}}
	}
	return nil
}

// twoOptions returns the options of a form that is one single-choice
// question with exactly two options.
func twoOptions(f askuser.Form) ([]askuser.Option, bool) {
	if len(f.Questions) != 1 {
		return nil, false
	}
	q := f.Questions[0]
	if q.MultiSelect || q.Type == askuser.TypeMultiple || q.Type == askuser.TypeText || len(q.Options) != 2 {
		return nil, false
	}
	return q.Options, true
}

// ErrAction refuses an action the ask does not offer.
var ErrAction = errors.New("this answer does not fit the ask; open it to answer")

// Response is the answer an action gives the ask p.
func Response(p runner.AskPayload, action string) (runner.Response, error) {
	switch {
	case p.Kind == "permission" && action == ActAllow:
		return runner.Response{}, nil
	case p.Kind == "permission" && action == ActDeny:
		return runner.Response{Decline: true, Reason: "Denied from a notification."}, nil
	case p.Kind == "plan" && action == ActApprove:
		return runner.Response{Mode: "default"}, nil
	case p.Kind == "question" && strings.HasPrefix(action, ActChoice):
		opts, ok := twoOptions(p.TheForm())
		i, err := strconv.Atoi(strings.TrimPrefix(action, ActChoice))
		if !ok || err != nil || i < 0 || i >= len(opts) {
			return runner.Response{}, ErrAction
		}
		return runner.Response{Replies: []askuser.Reply{{Selected: []string{opts[i].Label}}}}, nil
	}
	return runner.Response{}, ErrAction
}

// ActionTitle names an action of the ask p in a sentence's words.
func ActionTitle(p runner.AskPayload, action string) (string, error) {
	for _, a := range actions(Ask{Kind: p.Kind, Payload: p}) {
		if a.ID == action && a.ID != ActOpen {
			return a.Title, nil
		}
	}
	return "", fmt.Errorf("%w (%q)", ErrAction, action)
}

func nonEmpty(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
