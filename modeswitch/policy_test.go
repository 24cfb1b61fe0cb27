package modeswitch

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/store"
)

// TestChoicesFor offers only what the project allows: the pin's models
// (as the gateway rules), the members' modes, bypassPermissions only where
// the project allows it.
func TestChoicesFor(t *testing.T) {
	members := store.MCPSettings{MemberPermissionModes: []string{"default", "plan"}}
	tests := []struct {
		name  string
		p     store.ProjectSettings
		o     store.SessionOptions
		ms    store.MCPSettings
		owner bool
		want  Choices
	}{
		{"no pin, member", store.ProjectSettings{}, store.SessionOptions{}, members, false,
			Choices{Models: []string{"default", "opus", "sonnet", "haiku"}, Modes: []string{"default", "plan"}}},
		{"alias pin, owner", store.ProjectSettings{Model: "sonnet"}, store.SessionOptions{}, members, true,
			Choices{Models: []string{"sonnet", "haiku"}, Modes: []string{"default", "acceptEdits", "plan"}}},
		{"id pin", store.ProjectSettings{Model: "claude-sonnet-4-5"}, store.SessionOptions{}, members, false,
			Choices{Models: []string{"claude-sonnet-4-5", "haiku"}, Modes: []string{"default", "plan"}}},
		{"session pin wins", store.ProjectSettings{Model: "sonnet"}, store.SessionOptions{Model: "opus"}, members, false,
			Choices{Models: []string{"opus", "haiku"}, Modes: []string{"default", "plan"}}},
		{"bypass allowed", store.ProjectSettings{PermissionMode: "bypassPermissions"}, store.SessionOptions{}, members, true,
			Choices{Models: []string{"default", "opus", "sonnet", "haiku"}, Modes: []string{"default", "acceptEdits", "plan", "bypassPermissions"}}},
	}
	for _, tt := range tests {
		got := ChoicesFor(tt.p, tt.o, tt.ms, tt.owner)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if err := (Choices{Models: []string{"sonnet", "haiku"}}).Check("model", "opus"); err == nil {
		t.Error("a model outside the choices was not refused")
	}
}

// TestTypedModel reads only "/model NAME".
func TestTypedModel(t *testing.T) {
	for text, want := range map[string]string{"/model haiku": "haiku", "  /model   sonnet ": "sonnet", "/model": "", "/model a b": "", "/models x": "", "model haiku": ""} {
		got, ok := TypedModel(text)
		if got != want || ok != (want != "") {
			t.Errorf("TypedModel(%q) = %q, %v", text, got, ok)
		}
	}
}
