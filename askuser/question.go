package askuser

import (
	"errors"
	"fmt"
	"strings"
)

// maxOptions bounds the choices offered with one question; more than this
// will not fit a person's attention, let alone the page.
const maxOptions = 10

// maxQuestions bounds the questions of one form.
const maxQuestions = 4

// Option is one choice offered with a [Question].
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// The types of a [Question].
const (
	TypeText     = "text"     // free text
	TypeSingle   = "single"   // one of the options
	TypeMultiple = "multiple" // any of the options
	TypeYesNo    = "yes_no"   // Yes or No
)

// Question is one thing the model asks: free text, a choice among Options
// (one, or several), or yes/no. People may always add text to a choice.
// The single-question ask_user tool sets Options and MultiSelect and leaves
// Type empty; [Question.Kind] reads both.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	Type        string   `json:"type,omitempty"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Optional    bool     `json:"optional,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
}

// Kind is the question's effective type.
func (q Question) Kind() string {
	switch {
	case q.Type != "":
		return q.Type
	case len(q.Options) == 0:
		return TypeText
	case q.MultiSelect:
		return TypeMultiple
	default:
		return TypeSingle
	}
}

// Choices are the labels a person may select: the options, or Yes and No.
func (q Question) Choices() []Option {
	if q.Kind() == TypeYesNo {
		return []Option{{Label: "Yes"}, {Label: "No"}}
	}
	return q.Options
}

// Validate reports the first problem with q, naming the field at fault
// ("options[1].label: must not be empty").
func (q Question) Validate() error {
	if strings.TrimSpace(q.Question) == "" {
		return errors.New("question: must not be empty")
	}
	switch q.Type {
	case "", TypeText, TypeSingle, TypeMultiple, TypeYesNo:
	default:
		return fmt.Errorf("type: %q is not one of text, single, multiple, yes_no", q.Type)
	}
	if len(q.Options) > maxOptions {
		return fmt.Errorf("options: at most %d options, got %d", maxOptions, len(q.Options))
	}
	seen := make(map[string]int, len(q.Options))
	for i, o := range q.Options {
		label := strings.TrimSpace(o.Label)
		if label == "" {
			return fmt.Errorf("options[%d].label: must not be empty", i)
		}
		if j, ok := seen[label]; ok {
			return fmt.Errorf("options[%d].label: %q repeats options[%d].label", i, o.Label, j)
		}
		seen[label] = i
	}
	if q.MultiSelect && len(q.Options) == 0 {
		return errors.New("multiSelect: needs options to select from")
	}
	if (q.Type == TypeSingle || q.Type == TypeMultiple) && len(q.Options) == 0 {
		return fmt.Errorf("options: a %s choice question needs options", q.Type)
	}
	return nil
}

// Form is what one ask puts to people: 1–4 questions and an optional title.
type Form struct {
	Title     string     `json:"title,omitempty"`
	Questions []Question `json:"questions"`
}

// Single is a form of one question.
func Single(q Question) Form { return Form{Questions: []Question{q}} }

// Validate reports the first problem with f, naming the question at fault.
func (f Form) Validate() error {
	switch n := len(f.Questions); {
	case n == 0:
		return errors.New("questions: at least one question is required")
	case n > maxQuestions:
		return fmt.Errorf("questions: at most %d questions, got %d", maxQuestions, n)
	}
	if len(f.Questions) == 1 {
		return f.Questions[0].Validate()
	}
	for i, q := range f.Questions {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("question %d: %w", i+1, err)
		}
	}
	return nil
}

// Status is how an ask ended.
type Status string

// The ways an ask ends.
const (
	StatusAnswered  Status = "answered"
	StatusDeclined  Status = "declined"
	StatusTimedOut  Status = "timed_out"
	StatusCancelled Status = "cancelled"
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
		fmt.Fprintf(&b, "\n%d. %s → %s", i+1, quoteText(q.Question), shortReply(r))
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

// ReplyText is one reply in words, for people and for a resumed turn.
func ReplyText(r Reply) string { return shortReply(r) }

// Structured is the structured content of the tool result for f:
// {answered, declined, timedOut, answers: [{question, selected, text}], answeredBy}.
func (a Answer) Structured(f Form) map[string]any {
	answers := []map[string]any{}
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
			answers = append(answers, map[string]any{"question": q.Question, "selected": sel, "text": r.Text})
		}
	}
	m := map[string]any{
		"answered":   a.Status == StatusAnswered,
		"declined":   a.Status == StatusDeclined,
		"timedOut":   a.Status == StatusTimedOut,
		"answers":    answers,
		"answeredBy": a.AnsweredBy,
	}
	if a.Reason != "" {
		m["reason"] = a.Reason
	}
	return m
}

// Check validates replies from a person against f: one reply per question,
// required questions answered, selections among the choices.
func (f Form) Check(replies []Reply) error {
	if len(replies) > len(f.Questions) {
		return &AnswerError{"There are more answers than questions."}
	}
	for i, q := range f.Questions {
		var r Reply
		if i < len(replies) {
			r = replies[i]
		}
		if err := q.check(r); err != nil {
			if len(f.Questions) > 1 {
				return &AnswerError{fmt.Sprintf("Question %d: %s", i+1, err.Error())}
			}
			return err
		}
	}
	return nil
}

func (q Question) check(r Reply) error {
	if r.Empty() {
		if q.Optional {
			return nil
		}
		if q.Kind() == TypeText {
			return &AnswerError{"Write an answer."}
		}
		return &AnswerError{"Choose an option or write an answer."}
	}
	if len(r.Selected) > 1 && q.Kind() != TypeMultiple {
		return &AnswerError{"This question takes one option."}
	}
	for _, s := range r.Selected {
		if !hasChoice(q, s) {
			return &AnswerError{fmt.Sprintf("%q is not one of the options.", s)}
		}
	}
	return nil
}

func hasChoice(q Question, label string) bool {
	for _, o := range q.Choices() {
		if o.Label == label {
			return true
		}
	}
	return false
}

// AnswerError says why an answer does not fit its question, in a sentence
// for the person who sent it.
type AnswerError struct{ Msg string }

func (e *AnswerError) Error() string { return e.Msg }
