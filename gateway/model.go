package gateway

import (
	"regexp"
	"slices"
	"strings"
)

// The model rule. A project (or one of its sessions, when an owner chose
// its model) may pin a model; the pin is what the CLI is started with
// (--model), a full id such as claude-sonnet-4-5 or an alias such as
// sonnet. With no pin any model is allowed, and spending limits bound the
// cost. With a pin, a request may name:
//   - the pinned id itself, or a dated snapshot of it (claude-sonnet-4-5
//     allows claude-sonnet-4-5-20250929, not claude-sonnet-4-5-1);
//   - for an alias (opus, sonnet, haiku, opusplan, with or without a
//     "[1m]" suffix), any model of that family, since the CLI resolves
//     an alias to whichever id its version prefers (2.1.328 sends
//     claude-sonnet-5-5 for sonnet);
//   - any Haiku model: the CLI's small fast model for side requests
//     (titles, summaries) is ANTHROPIC_DEFAULT_HAIKU_MODEL or its haiku
//     alias (from the 2.1.328 binary's strings). Measured against the fake
//     API, 2.1.328 in -p stream-json mode sends none in a turn, a --resume
//     or `/model` (which sends a max_tokens 1 probe to the new model);
//     Haiku is allowed for the versions and modes that do, and being the
//     cheapest family it never costs more than the pin would.
//
// Everything else is refused, whoever asks: the CLI after `/model`, a
// session created over MCP, a tool's curl.

// aliases are the CLI's model aliases and the families each allows.
var aliases = map[string][]string{
	"opus": {"opus"}, "sonnet": {"sonnet"}, "haiku": {"haiku"},
	"opusplan": {"opus", "sonnet"}, // opus while planning, sonnet otherwise
}

// dated is a dated snapshot suffix, as in claude-sonnet-4-5-20250929.
var dated = regexp.MustCompile(`^-\d{8}$`)

// ModelAllowed reports whether a request (or a session) may use model
// when its session's pinned model is pin ("" = no pin).
func ModelAllowed(pin, model string) bool {
	pin, model = bare(pin), bare(model)
	switch {
	case pin == "" || model == pin:
		return true
	case family(model) == "haiku":
		return true
	}
	if fams, ok := aliases[pin]; ok {
		return slices.Contains(fams, family(model))
	}
	rest, ok := strings.CutPrefix(model, pin)
	return ok && dated.MatchString(rest)
}

// AllowedModels says in words which models pin allows, for a refusal.
func AllowedModels(pin string) string {
	pin = bare(pin)
	if fams, ok := aliases[pin]; ok {
		return pin + " (any Claude " + strings.Join(fams, " or ") + " model) and the Haiku models"
	}
	return pin + " and the Haiku models"
}

// bare drops the CLI's "[1m]" context-window suffix and surrounding space.
func bare(model string) string {
	model = strings.TrimSpace(model)
	if i := strings.IndexByte(model, '['); i >= 0 {
		model = model[:i]
	}
	return strings.ToLower(model)
}

// modelID is the exact shape of a Claude model id: claude-<family>-<version>
// (claude-sonnet-4-5, claude-opus-4) or the older claude-<version>-<family>
// (claude-3-5-sonnet), then an optional snapshot date or "latest"
// (-20250929, @20250929 on Vertex) and, on Bedrock, an "anthropic."
// region prefix and a "-v1:0" suffix. Exactly one family word, in its
// place: "claude-sonnet-4-5-opus" is no model id.
var modelID = regexp.MustCompile(`^(?:(?:[a-z]{2,4}\.)?anthropic\.)?claude-` +
	`(?:(opus|sonnet|haiku)-\d{1,2}(?:-\d{1,2})?|\d{1,2}(?:-\d{1,2})?-(opus|sonnet|haiku))` +
	`(?:[-@](?:\d{8}|latest))?(?:-v\d+(?::\d+)?)?$`)

// family is the model family (opus, sonnet, haiku) a model id or plain
// alias names, or "" when model is neither: the id is parsed whole
// (modelID), never searched for a family word.
func family(model string) string {
	switch model {
	case "opus", "sonnet", "haiku":
		return model
	}
	m := modelID.FindStringSubmatch(model)
	if m == nil {
		return ""
	}
	return m[1] + m[2]
}
