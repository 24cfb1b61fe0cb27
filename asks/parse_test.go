package asks

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/askuser"
	"parley/runner"
)

func ptr(s string) *string { return &s }

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		args    string
		want    runner.Response
		wantErr string
	}{
		{"--choice Blue", runner.Response{Replies: []askuser.Reply{{Selected: []string{"Blue"}}}}, ""},
		{"--choice Go --choice Rust --text mostly-Go", runner.Response{Replies: []askuser.Reply{{Selected: []string{"Go", "Rust"}, Text: "mostly-Go"}}}, ""},
		{"--text 1=billing --choice 2=Yes", runner.Response{Replies: []askuser.Reply{{Text: "billing"}, {Selected: []string{"Yes"}}}}, ""},
		{"--decline --reason later", runner.Response{Decline: true, Reason: "later"}, ""},
		{"--allow", runner.Response{}, ""},
		{"--allow --command ls", runner.Response{Command: ptr("ls")}, ""},
		{"--always", runner.Response{AllowAlways: true}, ""},
		{"--deny --reason no", runner.Response{Decline: true, Reason: "no"}, ""},
		{"--approve --mode acceptEdits", runner.Response{Mode: "acceptEdits"}, ""},
		{"--changes --reason smaller", runner.Response{Decline: true, Reason: "smaller"}, ""},
		{"--text caf\xe9", runner.Response{}, "not valid UTF-8 text"},
		{"", runner.Response{}, "give one answer"},
		{"--allow --deny", runner.Response{}, "give one answer"},
		{"--deny --command ls", runner.Response{}, "--command goes with --allow"},
		{"--allow --reason why", runner.Response{}, "--reason goes with"},
		{"--choice A --mode default", runner.Response{}, "--mode goes with --approve"},
		{"--text a --text b", runner.Response{}, "two --text values"},
		{"--bogus", runner.Response{}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		got, err := ParseAnswer(strings.Fields(tt.args))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseAnswer(%q) = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAnswer(%q): %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseAnswer(%q) mismatch (-want +got):\n%s", tt.args, diff)
		}
	}
}
