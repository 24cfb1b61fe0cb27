package mcpapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestElicitSchema(t *testing.T) {
	tests := []struct {
		name string
		in   PendingInput
		want map[string]any
	}{
		{"permission", PendingInput{Type: "permission"}, map[string]any{"type": "object", "required": []string{"decision"},
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{"allow", "deny"}},
				"reason":   map[string]any{"type": "string", "title": "Reason (for deny)"},
			}}},
		{"questions", PendingInput{Type: "ask_user", Questions: []Question{
			{Question: "Which colour?", Options: []string{"Blue", "Red"}},
			{Question: "Which toppings?", Header: "Toppings", Options: []string{"Ham", "Olives"}, MultiSelect: true},
			{Question: "Anything else?", Optional: true},
		}}, map[string]any{"type": "object", "required": []string{"q0", "q1"}, "properties": map[string]any{
			"q0": map[string]any{"type": "string", "title": "Which colour?", "enum": []string{"Blue", "Red"}},
			"q1": map[string]any{"type": "array", "title": "Which toppings?", "description": "Toppings",
				"items": map[string]any{"type": "string", "enum": []string{"Ham", "Olives"}}},
			"q2": map[string]any{"type": "string", "title": "Anything else?"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, elicitSchema(tt.in)); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
		})
	}
}
