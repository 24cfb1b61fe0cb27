package gateway

import "testing"

// TestRedteamModelRuleTricks: a run's curl names an expensive model in a
// form the rule might read as the pinned one (case, spaces, a context
// suffix, a look-alike letter, a family word in a later part). Each is
// refused under a claude-sonnet-4-5 pin and under the sonnet alias,
// including made-up ids that name sonnet (or haiku, which every pin
// allows) before or after another family word: the rule parses an id
// whole (modelID), it does not take the first family word it finds.
func TestRedteamModelRuleTricks(t *testing.T) {
	tricks := []string{
		"Claude-Opus-4-1", "CLAUDE-OPUS-4-1", " claude-opus-4-1 ", "opus ", "Opus",
		"claude-opus-4-1[1m]", "claude-opus-4-1\u200b", "claude-opus-4-1\t",
		"claude-opus-4-1-sonnet", "claude-\u043epus-4-1", // Cyrillic o
		"claude-opus-4-1?sonnet", "opusplan", "claude-opus-4-5-20251101",
		"claude-sonnet-4-5-opus", "claude-sonnet-opus-4-5", "claude-sonnet-4-5-opus-20250929",
		"claude-haiku-4-5-opus", "claude-haiku-opus-4-1", "claude-3-5-haiku-opus",
		"claude-opus-4-1-haiku", "claude-sonnet-4-5.opus", "claude-sonnet-4-5@opus",
		"claude-sonnet-4-5:opus", "claude-sonnet-4-5/opus", "claude-sonnet-4-5-x", "claude-sonnet",
		"x-claude-sonnet-4-5", "claude-sonnet-4-5-20250929-opus",
	}
	for _, pin := range []string{"claude-sonnet-4-5", "sonnet"} {
		for _, m := range tricks {
			if ModelAllowed(pin, m) {
				t.Errorf("pin %q allows %q", pin, m)
			}
		}
	}
}

// TestModelRuleParsesRealIDs: the ids that exist in each form are still
// read as their family under an alias pin, and haiku ids under any pin.
func TestModelRuleParsesRealIDs(t *testing.T) {
	for _, tc := range []struct{ pin, model string }{
		{"sonnet", "claude-sonnet-4-5"}, {"sonnet", "claude-sonnet-4-5-20250929"}, {"sonnet", "claude-sonnet-5-5"},
		{"sonnet", "claude-sonnet-4-20250514"}, {"sonnet", "claude-3-5-sonnet-20241022"}, {"sonnet", "claude-3-7-sonnet-latest"},
		{"sonnet", "claude-sonnet-4-5@20250929"}, {"sonnet", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{"opus", "claude-opus-4-1"}, {"opusplan", "claude-opus-5-5"}, {"opusplan", "claude-sonnet-5-5"},
		{"claude-opus-4-1", "claude-haiku-4-5"}, {"claude-opus-4-1", "claude-3-5-haiku-20241022"}, {"sonnet", "haiku"},
	} {
		if !ModelAllowed(tc.pin, tc.model) {
			t.Errorf("pin %q refuses %q", tc.pin, tc.model)
		}
	}
}
