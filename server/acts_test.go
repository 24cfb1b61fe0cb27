package server

import (
	"errors"
	"testing"

	"parley/act"
)

// TestActErrors: the MCP backend tells the pages' refusals apart through
// package act alone: not found is act.ErrNotFound (and only it), and every
// refusal carries the sentence the page shows.
func TestActErrors(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		notFound bool
	}{
		{"not found", errNotFound, true},
		{"archived", errArchived, false},
		{"viewer", forbiddenFor(actPrompt), false},
		{"bad request", badRequest("Write something for Claude first."), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errors.Is(tt.err, act.ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(%q, act.ErrNotFound) = %v, want %v", tt.err, got, tt.notFound)
			}
			var rf act.Refusal
			if !errors.As(tt.err, &rf) || rf.Refusal() != tt.err.Error() {
				t.Errorf("refusal of %q not found or not its sentence", tt.err)
			}
		})
	}
	if errors.Is(errors.New("boom"), act.ErrNotFound) {
		t.Error("an unknown error matched act.ErrNotFound")
	}
}
