package runner

import (
	"slices"
	"testing"
)

// A run's CLI sends nothing nonessential around the gateway, whatever the
// base environment holds, and keeps the base's allowed entries.
func TestRunEnvHasNoNonessentialTraffic(t *testing.T) {
	env := runEnv(BaseEnv([]string{"PATH=/usr/bin", "DATABASE_URL=postgres://secret", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=0"}),
		Spec{ConfigDir: "/cfg", ModelURL: "http://127.0.0.1:1", ModelToken: "tok"})
	last := map[string]string{}
	for _, kv := range env {
		for i := range kv {
			if kv[i] == '=' {
				last[kv[:i]] = kv[i+1:] // exec keeps the last value of a repeated key
				break
			}
		}
	}
	if last["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] != "1" {
		t.Fatalf("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = %q, want 1: %q", last["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], env)
	}
	if last["PATH"] != "/usr/bin" || slices.ContainsFunc(env, func(kv string) bool { return kv == "DATABASE_URL=postgres://secret" }) {
		t.Fatalf("base environment not filtered as before: %q", env)
	}
}
