package askuser

import (
	"errors"
	"fmt"
	"strings"
)

// minOptions and maxOptions bound the choices offered with one question
// (the ask_user_questions and AskUserQuestion contract: 2–4); more will not
// fit a person's attention, and one is not a choice.
const (
	minOptions = 2
	maxOptions = 4
)

// errNUL says why a text with a NUL character is refused: the log cannot
// store it, and no person could read it.
const errNUL = "must not contain a NUL character (\\u0000)"

// maxIDLen bounds a question's id.
const maxIDLen = 64

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
	// ID, if set, keys the question's answer in the structured result
	// (answersById), so the model need not match question texts.
	ID          string   `json:"id,omitempty"`
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
	for _, f := range [...]struct{ name, v string }{{"question", q.Question}, {"header", q.Header}, {"placeholder", q.Placeholder}} {
		if strings.ContainsRune(f.v, 0) {
			return errors.New(f.name + ": " + errNUL)
		}
	}
	switch q.Type {
	case "", TypeText, TypeSingle, TypeMultiple, TypeYesNo:
	default:
		return fmt.Errorf("type: %q is not one of text, single, multiple, yes_no", q.Type)
	}
	if err := validID(q.ID); err != nil {
		return err
	}
	if n := len(q.Options); n > 0 && (n < minOptions || n > maxOptions) {
		return fmt.Errorf("options: give %d–%d options, got %d", minOptions, maxOptions, n)
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
		if strings.ContainsRune(o.Label, 0) || strings.ContainsRune(o.Description, 0) {
			return fmt.Errorf("options[%d]: %s", i, errNUL)
		}
	}
	if q.MultiSelect && len(q.Options) == 0 {
		return errors.New("multiSelect: needs options to select from")
	}
	if (q.Type == TypeSingle || q.Type == TypeMultiple) && len(q.Options) == 0 {
		return fmt.Errorf("options: a %s choice question needs options", q.Type)
	}
	return nil
}

// validID checks a question id: short, and letters, digits, "_", "-" or ".".
func validID(id string) error {
	if id == "" {
		return nil
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("id: at most %d characters, got %d", maxIDLen, len(id))
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("id: %q may hold only letters, digits, _, - and .", id)
		}
	}
	return nil
}

// Form is what one ask puts to people: 1–4 questions and an optional title.
type Form struct {
	Title     string     `json:"title,omitempty"`
	Questions []Question `json:"questions"`
	// TimeoutSeconds is the wait the model chose for this call, within the
	// project's bounds ([Bounds]); 0 = the project's default.
	TimeoutSeconds int `json:"timeout,omitempty"`
	// ToolUseID is the id of the CLI's tool_use block of this call (the
	// MCP request's _meta "claudecode/toolUseId"), set by [Serve]'s tool,
	// never by the model: the server tells by it that Claude has the
	// answer (the call's tool_result) and which call asks again.
	ToolUseID string `json:"tool_use_id,omitempty"`
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
	if f.TimeoutSeconds < 0 {
		return fmt.Errorf("timeout: must not be negative, got %d", f.TimeoutSeconds)
	}
	if strings.ContainsRune(f.Title, 0) {
		return errors.New("title: " + errNUL)
	}
	if len(f.Questions) == 1 {
		return f.Questions[0].Validate()
	}
	ids := map[string]int{}
	for i, q := range f.Questions {
		if err := q.Validate(); err != nil {
			return fmt.Errorf("question %d: %w", i+1, err)
		}
		if j, ok := ids[q.ID]; ok && q.ID != "" {
			return fmt.Errorf("question %d: id: %q repeats the id of question %d", i+1, q.ID, j+1)
		}
		ids[q.ID] = i
	}
	return nil
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
