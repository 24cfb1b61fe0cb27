package askuser

import (
	"errors"
	"fmt"
	"strings"
)

// maxOptions bounds the choices offered with one question; more than this
// will not fit a person's attention, let alone the page.
const maxOptions = 10

// Option is one choice offered with a [Question].
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Question is what the model asks: free text, or a choice among Options
// (one, or several when MultiSelect is set). People may always add text.
type Question struct {
	Question    string   `json:"question"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
}

// Validate reports the first problem with q, naming the field at fault
// ("options[1].label: must not be empty").
func (q Question) Validate() error {
	if strings.TrimSpace(q.Question) == "" {
		return errors.New("question: must not be empty")
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
	return nil
}

// Status is how an ask ended.
type Status string

// The ways an ask ends.
const (
	StatusAnswered  Status = "answered"
	StatusTimedOut  Status = "timed_out"
	StatusCancelled Status = "cancelled"
)

// Answer is the outcome of a [Question].
type Answer struct {
	Status Status `json:"status"`
	// Selected holds the labels of the chosen options.
	Selected []string `json:"selected,omitempty"`
	// Text is what the person wrote, if anything.
	Text string `json:"text,omitempty"`
	// AnsweredBy names the person who answered.
	AnsweredBy string `json:"answered_by,omitempty"`
	// Reason says why a question was cancelled.
	Reason string `json:"reason,omitempty"`
}

// timedOutText is what the model reads when nobody answered in time.
const timedOutText = "User did not respond within the timeout period. Proceeding with your best judgment."

// ResultText renders a as the text of the ask_user tool result, and reports
// whether the result is an error (anything but an answer).
func (a Answer) ResultText() (text string, isError bool) {
	switch a.Status {
	case StatusAnswered:
		return a.answeredText(), false
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

func (a Answer) answeredText() string {
	selected := strings.Join(a.Selected, ", ")
	switch {
	case selected != "" && a.Text != "":
		return "User selected: " + selected + "\nUser also wrote: " + a.Text
	case selected != "":
		return "User selected: " + selected
	case a.Text != "":
		return "User answered: " + a.Text
	default:
		return "User answered without choosing an option or writing anything."
	}
}
