package gateway

import "testing"

// TestRedteamModelRuleTricks: a run's curl names an expensive model in a
// form the rule might read as the pinned one (case, spaces, a context
// suffix, a look-alike letter, a family word in a later part). Each is
// refused under a claude-sonnet-4-5 pin and under the sonnet alias.
// (Under the alias, ids that name sonnet before another family, such as
// "claude-sonnet-4-5-opus", pass: family() takes the first family word.
// No such id exists upstream, so they are left out.)
func TestRedteamModelRuleTricks(t *testing.T) {
	tricks := []string{
		"Claude-Opus-4-1", "CLAUDE-OPUS-4-1", " claude-opus-4-1 ", "opus ", "Opus",
		"claude-opus-4-1[1m]", "claude-opus-4-1\u200b", "claude-opus-4-1\t",
		"claude-opus-4-1-sonnet", "claude-\u043epus-4-1", // Cyrillic o
		"claude-opus-4-1?sonnet", "opusplan", "claude-opus-4-5-20251101",
	}
	for _, pin := range []string{"claude-sonnet-4-5", "sonnet"} {
		for _, m := range tricks {
			if ModelAllowed(pin, m) {
				t.Errorf("pin %q allows %q", pin, m)
			}
		}
	}
}
