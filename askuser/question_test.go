package askuser

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuestionValidate(t *testing.T) {
	tests := []struct {
		name    string
		q       Question
		wantErr string // prefix naming the field; "" means valid
	}{
		{"free text", Question{Question: "Which port?"}, ""},
		{"single choice", Question{Question: "Colour?", Options: []Option{{Label: "Red"}, {Label: "Blue", Description: "calm"}}}, ""},
		{"multi choice", Question{Question: "Colours?", Options: []Option{{Label: "Red"}, {Label: "Blue"}}, MultiSelect: true}, ""},
		{"empty question", Question{Question: ""}, "question:"},
		{"blank question", Question{Question: " \n\t"}, "question:"},
		{"option without label", Question{Question: "Q?", Options: []Option{{Label: "A"}, {Description: "no label"}}}, "options[1].label:"},
		{"blank label", Question{Question: "Q?", Options: []Option{{Label: "  "}, {Label: "B"}}}, "options[0].label:"},
		{"one option", Question{Question: "Q?", Options: []Option{{Label: "A"}}}, "options: give 2–4"},
		{"bad id", Question{ID: "a b", Question: "Q?"}, "id:"},
		{"duplicate label", Question{Question: "Q?", Options: []Option{{Label: "A"}, {Label: "B"}, {Label: "A"}}}, "options[2].label:"},
		{"too many options", Question{Question: "Q?", Options: make([]Option, maxOptions+1)}, "options:"},
		{"multiSelect without options", Question{Question: "Q?", MultiSelect: true}, "multiSelect:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.q.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error starting %q", err, tt.wantErr)
			}
		})
	}
}

func TestAnswerResultText(t *testing.T) {
	tests := []struct {
		name        string
		a           Answer
		wantText    string
		wantIsError bool
	}{
		{"one selected", Answer{Status: StatusAnswered, Replies: []Reply{{Selected: []string{"A"}}}}, "User selected: A", false},
		{"two selected", Answer{Status: StatusAnswered, Replies: []Reply{{Selected: []string{"A", "B"}}}}, "User selected: A, B", false},
		{"free text", Answer{Status: StatusAnswered, Replies: []Reply{{Text: "use port 8080"}}}, "User answered: use port 8080", false},
		{"selected and text", Answer{Status: StatusAnswered, Replies: []Reply{{Selected: []string{"A", "B"}, Text: "but hurry"}}},
			"User selected: A, B\nUser also wrote: but hurry", false},
		{"empty answer", Answer{Status: StatusAnswered}, "User answered without choosing an option or writing anything.", false},
		{"timed out", Answer{Status: StatusTimedOut},
			"User did not respond within the timeout period. Proceeding with your best judgment.", true},
		{"cancelled with reason", Answer{Status: StatusCancelled, Reason: "the session was deleted"},
			"The question was cancelled before the user answered: the session was deleted.", true},
		{"cancelled reason with full stop", Answer{Status: StatusCancelled, Reason: "Stopped by Ann."},
			"The question was cancelled before the user answered: Stopped by Ann.", true},
		{"cancelled without reason", Answer{Status: StatusCancelled},
			"The question was cancelled before the user answered: the run was stopped.", true},
		{"declined with reason", Answer{Status: StatusDeclined, Reason: "I don't know yet — decide yourself"},
			"The user declined to answer. Their reason: “I don't know yet — decide yourself”. Do not wait for an answer: take the reason into account and decide how to proceed.", false},
		{"declined without reason", Answer{Status: StatusDeclined},
			"The user declined to answer and gave no reason. Do not wait for an answer: decide yourself how to proceed, or ask differently.", false},
		{"unknown status", Answer{Status: "lost"},
			`The question ended with an unknown status "lost"; the user's answer is not available.`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotText, gotIsError := tt.a.ResultText(Single(Question{Question: "Q?"}))
			if gotText != tt.wantText || gotIsError != tt.wantIsError {
				t.Errorf("ResultText() = %q, %v; want %q, %v", gotText, gotIsError, tt.wantText, tt.wantIsError)
			}
		})
	}
}

func TestFormResultAndStructured(t *testing.T) {
	f := Form{Title: "New service", Questions: []Question{
		{Question: "Name?", Type: TypeText},
		{Question: "Languages?", Type: TypeMultiple, Options: []Option{{Label: "Go"}, {Label: "Rust"}}},
		{Question: "Public?", Type: TypeYesNo},
		{Question: "Notes?", Type: TypeText, Optional: true},
	}}
	a := Answer{Status: StatusAnswered, AnsweredBy: "ann", Replies: []Reply{
		{Text: "billing"}, {Selected: []string{"Go", "Rust"}, Text: "mostly Go"}, {Selected: []string{"No"}}, {}}}
	if err := f.Check(a.Replies); err != nil {
		t.Fatalf("Check: %v", err)
	}
	text, isErr := a.ResultText(f)
	want := "The user answered your questions:\n1. “Name?” → “billing”\n2. “Languages?” → Go, Rust, “mostly Go”\n3. “Public?” → No\n4. “Notes?” → (no answer)"
	if text != want || isErr {
		t.Errorf("ResultText = %q, %v; want %q", text, isErr, want)
	}
	got := a.Structured(f)
	wantS := map[string]any{"answered": true, "declined": false, "timedOut": false, "cancelled": false, "answeredBy": "ann",
		"answersById": map[string]any{},
		"answers": []map[string]any{
			{"question": "Name?", "selected": []string{}, "text": "billing"},
			{"question": "Languages?", "selected": []string{"Go", "Rust"}, "text": "mostly Go"},
			{"question": "Public?", "selected": []string{"No"}, "text": ""},
			{"question": "Notes?", "selected": []string{}, "text": ""},
		}}
	if diff := cmp.Diff(wantS, got); diff != "" {
		t.Errorf("Structured mismatch (-want +got):\n%s", diff)
	}
	d := Answer{Status: StatusDeclined, Reason: "later", AnsweredBy: "bo"}.Structured(f)
	if d["declined"] != true || d["answered"] != false || len(d["answers"].([]map[string]any)) != 0 {
		t.Errorf("declined Structured = %v", d)
	}
}

func TestFormCheck(t *testing.T) {
	f := Form{Questions: []Question{
		{Question: "Name?", Type: TypeText},
		{Question: "Colour?", Type: TypeSingle, Options: []Option{{Label: "Red"}, {Label: "Blue"}}},
	}}
	tests := []struct {
		name    string
		replies []Reply
		want    string
	}{
		{"ok", []Reply{{Text: "x"}, {Selected: []string{"Red"}}}, ""},
		{"missing text", []Reply{{}, {Selected: []string{"Red"}}}, "Question 1: Write an answer."},
		{"two for single", []Reply{{Text: "x"}, {Selected: []string{"Red", "Blue"}}}, "Question 2: This question takes one option."},
		{"not an option", []Reply{{Text: "x"}, {Selected: []string{"Pink"}}}, `Question 2: "Pink" is not one of the options.`},
		{"missing choice", []Reply{{Text: "x"}}, "Question 2: Choose an option or write an answer."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Check(tt.replies)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}
