package askuser

import (
	"fmt"
	"strings"
)

// Status is how an ask ended.
type Status string

// The ways an ask ends.
const (
	StatusAnswered  Status = "answered"
	StatusDeclined  Status = "declined"
	StatusTimedOut  Status = "timed_out"
	StatusCancelled Status = "cancelled"
	// StatusExpired ends a detached ask nobody answered in the project's
	// expiry time; no process waits for it, so no client ever reads it.
	StatusExpired Status = "expired"
)

// Reply is a person's answer to one question.
type Reply struct {
	// Selected holds the labels of the chosen options.
	Selected []string `json:"selected,omitempty"`
	// Text is what the person wrote, if anything.
	Text string `json:"text,omitempty"`
}

// Empty reports whether the reply says nothing.
func (r Reply) Empty() bool { return len(r.Selected) == 0 && strings.TrimSpace(r.Text) == "" }

// Answer is the outcome of a [Form].
type Answer struct {
	Status Status `json:"status"`
	// Replies holds one reply per question, in order, when answered.
	Replies []Reply `json:"replies,omitempty"`
	// AnsweredBy names the person who answered or declined.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Reason says why the ask was declined or cancelled.
	Reason string `json:"reason,omitempty"`
}

// timedOutText is what the model reads when nobody answered in time.
const timedOutText = "User did not respond within the timeout period. Proceeding with your best judgment."

// ResultText renders a as the text of the tool result for f, and reports
// whether the result is an error (anything but an answer or a decline).
func (a Answer) ResultText(f Form) (text string, isError bool) {
	switch a.Status {
	case StatusAnswered:
		return AnsweredText(f, a.Replies), false
	case StatusDeclined:
		return DeclinedText(a.Reason), false
	case StatusTimedOut:
		return timedOutText, true
	case StatusCancelled:
		reason := strings.TrimRight(strings.TrimSpace(a.Reason), ".")
		if reason == "" {
			reason = "the run was stopped"
		}
		return "The question was cancelled before the user answered: " + reason + ".", true
	default:
		return fmt.Sprintf("The question ended with an unknown status %q; the user's answer is not available.", a.Status), true
	}
}

// DeclinedText is what the model reads when a person declines to answer.
func DeclinedText(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "The user declined to answer and gave no reason. Do not wait for an answer: decide yourself how to proceed, or ask differently."
	}
	return "The user declined to answer. Their reason: " + quoteText(reason) + ". Do not wait for an answer: take the reason into account and decide how to proceed."
}

// AnsweredText renders the replies to f as the model reads them. One
// question reads "User selected: A"; several read one line each, quoting
// the question.
func AnsweredText(f Form, replies []Reply) string {
	if len(f.Questions) <= 1 {
		var r Reply
		if len(replies) > 0 {
			r = replies[0]
		}
		return replyText(r)
	}
	var b strings.Builder
	b.WriteString("The user answered your questions:")
	for i, q := range f.Questions {
		var r Reply
		if i < len(replies) {
			r = replies[i]
		}
		id := ""
		if q.ID != "" {
			id = "[" + q.ID + "] "
		}
		fmt.Fprintf(&b, "\n%d. %s%s → %s", i+1, id, quoteText(q.Question), shortReply(r))
	}
	return b.String()
}

func replyText(r Reply) string {
	selected := strings.Join(r.Selected, ", ")
	switch {
	case selected != "" && r.Text != "":
		return "User selected: " + selected + "\nUser also wrote: " + r.Text
	case selected != "":
		return "User selected: " + selected
	case r.Text != "":
		return "User answered: " + r.Text
	default:
		return "User answered without choosing an option or writing anything."
	}
}

func shortReply(r Reply) string {
	parts := append([]string{}, r.Selected...)
	if r.Text != "" {
		parts = append(parts, quoteText(r.Text))
	}
	if len(parts) == 0 {
		return "(no answer)"
	}
	return strings.Join(parts, ", ")
}

// quoteText puts s in double quotes for the model.
func quoteText(s string) string { return "\u201c" + s + "\u201d" }

// Structured is the structured content of the tool result for f:
// {answered, declined, timedOut, cancelled, answers: [{id?, question,
// selected, text}], answersById: {id: {selected, text}}, answeredBy}.
// Exactly one of the four flags is true.
func (a Answer) Structured(f Form) map[string]any {
	answers := []map[string]any{}
	byID := map[string]any{}
	if a.Status == StatusAnswered {
		for i, q := range f.Questions {
			var r Reply
			if i < len(a.Replies) {
				r = a.Replies[i]
			}
			sel := r.Selected
			if sel == nil {
				sel = []string{}
			}
			ans := map[string]any{"question": q.Question, "selected": sel, "text": r.Text}
			if q.ID != "" {
				ans["id"] = q.ID
				byID[q.ID] = map[string]any{"selected": sel, "text": r.Text}
			}
			answers = append(answers, ans)
		}
	}
	m := map[string]any{
		"answered":    a.Status == StatusAnswered,
		"declined":    a.Status == StatusDeclined,
		"timedOut":    a.Status == StatusTimedOut,
		"cancelled":   a.Status == StatusCancelled,
		"answers":     answers,
		"answersById": byID,
		"answeredBy":  a.AnsweredBy,
	}
	if a.Reason != "" {
		m["reason"] = a.Reason
	}
	return m
}
