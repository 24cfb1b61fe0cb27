// Package views holds Parley's templ components: pure functions of data.
package views

import (
	"strconv"

	"parley/limit"
)

// MaxPromptBytes bounds the text of one prompt or answer (limit.TextBytes).
// The page refuses a longer one before sending it (static/app.js reads it
// from the body's data-max-bytes), and the server refuses it again.
const MaxPromptBytes = limit.TextBytes

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func optID(askID string, i int) string { return "ask-" + askID + "-opt-" + strconv.Itoa(i) }

// statusText is a session status in words.
func statusText(status string) string {
	switch status {
	case "running":
		return "Claude is working"
	case "waiting":
		return "waiting for you"
	case "completed":
		return "completed"
	case "interrupted":
		return "interrupted"
	case "error", "failed":
		return "error"
	case "ended":
		return "ended"
	default:
		return "idle"
	}
}

func askWho(a Ask) string {
	switch a.Kind {
	case "permission":
		return "Claude asks for permission"
	case "plan":
		return "Claude asks you to review a plan"
	}
	return "Claude asks"
}

func defaultDecision(kind string) string {
	switch kind {
	case "permission":
		return "allow"
	case "plan":
		return "approve"
	}
	return "answer"
}

// fieldName names question i's form field: choice_0, other_1, …
func fieldName(base string, i int) string { return base + "_" + strconv.Itoa(i) }

// qIDFirst labels the card with its first question when it has no title.
func qIDFirst(a Ask, i int) string {
	if i == 0 && a.Title == "" {
		return "ask-" + a.ID + "-q"
	}
	return "ask-" + a.ID + "-q" + strconv.Itoa(i)
}

func choices(q AskQuestion) []AskOption {
	if q.Type == "yes_no" {
		return []AskOption{{Label: "Yes"}, {Label: "No"}}
	}
	return q.Options
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
