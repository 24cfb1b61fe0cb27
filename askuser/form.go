package askuser

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

const formDescription = `Ask the user (the people working with you in this Parley chat) up to four questions at once, as a small form, and wait for their replies.

Use it instead of ask_user when you need several related answers together (for example the settings of a new component). Each question has a type: "text" (free text), "single" (one of 2–4 options), "multiple" (any of 2–4 options) or "yes_no". Questions are required unless "required" is false. The user may also decline the whole form with a reason; then decide yourself how to proceed. On a timeout, carry on with your best judgment.`

// formSchema is the ask_user_questions input schema.
func formSchema(c Config) *jsonschema.Schema {
	closed := closedSchema()
	option := optionSchema()
	question := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"id":          {Type: "string", Pattern: "^[A-Za-z0-9_.-]{1,64}$", Description: "Optional key for this question; its answer is then also in answersById[id]."},
			"question":    {Type: "string", Description: "The question, complete and self-contained."},
			"header":      {Type: "string", Description: "A short label for the question (a few words)."},
			"type":        {Type: "string", Enum: []any{TypeText, TypeSingle, TypeMultiple, TypeYesNo}, Description: "text, single, multiple or yes_no."},
			"options":     {Type: "array", Items: option, MinItems: jsonschema.Ptr(2), MaxItems: jsonschema.Ptr(4), Description: "2–4 choices, for single and multiple."},
			"required":    {Type: "boolean", Default: json.RawMessage("true"), Description: "Whether the user must answer this question."},
			"placeholder": {Type: "string", Description: "Hint text shown in an empty text answer."},
		},
		Required:             []string{"question", "type"},
		AdditionalProperties: closed,
	}
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"title":     {Type: "string", Description: "An optional title for the form."},
			"questions": {Type: "array", Items: question, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(maxQuestions)},
			"timeout":   timeoutSchema(c),
		},
		Required:             []string{"questions"},
		AdditionalProperties: closed,
	}
}

// formQuestion is one question as the model sends it.
type formQuestion struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	Type        string   `json:"type"`
	Options     []Option `json:"options"`
	Required    *bool    `json:"required"`
	Placeholder string   `json:"placeholder"`
}

// decodeForm parses and validates the ask_user_questions arguments. Each
// error names the field, counting questions from 1 as people do.
func decodeForm(args json.RawMessage) (Form, error) {
	var in struct {
		Title     string         `json:"title"`
		Questions []formQuestion `json:"questions"`
		Timeout   int            `json:"timeout"`
	}
	if len(bytes.TrimSpace(args)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return Form{}, err
		}
	}
	switch n := len(in.Questions); {
	case n == 0:
		return Form{}, errors.New("At least one question is required")
	case n > maxQuestions:
		return Form{}, fmt.Errorf("questions: at most %d questions, got %d", maxQuestions, n)
	}
	f := Form{Title: strings.TrimSpace(in.Title), TimeoutSeconds: in.Timeout}
	for i, fq := range in.Questions {
		q, err := fq.toQuestion()
		if err != nil {
			return Form{}, fmt.Errorf("question %d: %w", i+1, err)
		}
		f.Questions = append(f.Questions, q)
	}
	return f, f.Validate()
}

func (fq formQuestion) toQuestion() (Question, error) {
	q := Question{ID: fq.ID, Question: fq.Question, Header: fq.Header, Type: fq.Type, Options: fq.Options,
		Placeholder: fq.Placeholder, Optional: fq.Required != nil && !*fq.Required}
	if q.Type == "" {
		return q, errors.New("type: required (text, single, multiple or yes_no)")
	}
	if err := q.Validate(); err != nil {
		return q, err
	}
	switch q.Type {
	case TypeSingle, TypeMultiple:
		if n := len(q.Options); n < 2 || n > 4 {
			return q, fmt.Errorf("a choice question needs 2–4 options, got %d", n)
		}
	case TypeText, TypeYesNo:
		if len(q.Options) > 0 {
			return q, fmt.Errorf("options: a %s question takes no options", q.Type)
		}
	}
	return q, nil
}
