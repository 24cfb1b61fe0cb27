package askuser

import (
	"strings"
	"testing"
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
		{"blank label", Question{Question: "Q?", Options: []Option{{Label: "  "}}}, "options[0].label:"},
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
		{"one selected", Answer{Status: StatusAnswered, Selected: []string{"A"}}, "User selected: A", false},
		{"two selected", Answer{Status: StatusAnswered, Selected: []string{"A", "B"}}, "User selected: A, B", false},
		{"free text", Answer{Status: StatusAnswered, Text: "use port 8080"}, "User answered: use port 8080", false},
		{"selected and text", Answer{Status: StatusAnswered, Selected: []string{"A", "B"}, Text: "but hurry"},
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
		{"unknown status", Answer{Status: "lost"},
			`The question ended with an unknown status "lost"; the user's answer is not available.`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotText, gotIsError := tt.a.ResultText()
			if gotText != tt.wantText || gotIsError != tt.wantIsError {
				t.Errorf("ResultText() = %q, %v; want %q, %v", gotText, gotIsError, tt.wantText, tt.wantIsError)
			}
		})
	}
}
