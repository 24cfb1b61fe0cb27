package runner

import (
	"slices"
	"strings"
)

// allowedEnv are the variables of Parley's own environment a run may see:
// locale, time zone and terminal settings, and PATH. Nothing else passes —
// not DATABASE_URL, not ANTHROPIC_API_KEY, not any PARLEY_* — because
// whatever the environment holds, a Bash call in the run can print.
// IS_SANDBOX is no secret: it is how an operator running Parley as root with
// isolation off tells the CLI that bypassPermissions is acceptable (the
// settings page points to it).
var allowedEnv = []string{"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "IS_SANDBOX"}

// BaseEnv returns the entries of environ that a run may inherit
// (KEY=value, in order). The runner adds each run's own variables.
func BaseEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "LC_") || slices.Contains(allowedEnv, k) {
			out = append(out, kv)
		}
	}
	return out
}
