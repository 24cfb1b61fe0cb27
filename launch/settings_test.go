package launch

import (
	"slices"
	"testing"

	"parley/store"
)

// TestWithSessionOptions: a session's own options lay over its project's,
// the tool lists growing and the rest replaced.
func TestWithSessionOptions(t *testing.T) {
	project := store.ProjectSettings{AllowedTools: []string{"Read"}, DisallowedTools: []string{"WebFetch"}, MaxTurns: 10}
	got := WithSessionOptions(project, store.SessionOptions{AllowedTools: []string{"Read"}, DisallowedTools: []string{"Bash"}, SystemPrompt: "Be brief."})
	if !slices.Equal(got.DisallowedTools, []string{"WebFetch", "Bash"}) || !slices.Equal(got.AllowedTools, []string{"Read", "Read"}) ||
		got.AppendSystemPrompt != "Be brief." || got.MaxTurns != 10 {
		t.Errorf("merged settings = %+v", got)
	}
}
