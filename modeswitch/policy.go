// Package modeswitch is what a member may switch a session's model and
// permission mode to, and the switch itself: the live process through the
// CLI's control requests (runner.Supervisor.Switch), remembered for the
// session's next start, an event in its transcript saying who switched
// from what to what.
package modeswitch

import (
	"fmt"
	"slices"
	"strings"

	"parley/act"
	"parley/gateway"
	"parley/store"
)

// Choices are the models and permission modes a member may switch a
// session to.
type Choices struct {
	Models, Modes []string
}

// families are the CLI's model aliases offered when the pin allows them.
var families = []string{"opus", "sonnet", "haiku"}

// Pin is the model a session's runs are pinned to: the session's own (an
// owner chose it at creation) or else its project's; "" = none. The
// gateway rules on the same pin (runstore's usage sink).
func Pin(p store.ProjectSettings, o store.SessionOptions) string {
	if o.Model != "" {
		return o.Model
	}
	return p.Model
}

// ChoicesFor is what the session may switch to. Models: with no pin,
// "default" (the CLI's own) and the aliases opus, sonnet and haiku; with
// a pin, the pin and the aliases it allows (gateway.ModelAllowed, the rule
// the gateway enforces). Modes: for an owner, default, acceptEdits and
// plan; for a member, those of them the project allows members (its MCP
// settings); bypassPermissions for either only when the project allows
// it: its own mode is bypassPermissions or members may pick it.
func ChoicesFor(p store.ProjectSettings, o store.SessionOptions, ms store.MCPSettings, owner bool) Choices {
	var c Choices
	pin := Pin(p, o)
	if pin == "" {
		c.Models = append([]string{"default"}, families...)
	} else {
		c.Models = []string{pin}
		for _, f := range families {
			if f != pin && gateway.ModelAllowed(pin, f) {
				c.Models = append(c.Models, f)
			}
		}
	}
	bypass := p.PermissionMode == "bypassPermissions" || o.PermissionMode == "bypassPermissions" ||
		slices.Contains(ms.MemberPermissionModes, "bypassPermissions")
	for _, m := range act.PermissionModes {
		switch {
		case m == "bypassPermissions" && !bypass:
		case owner || slices.Contains(ms.MemberPermissionModes, m):
			c.Modes = append(c.Modes, m)
		}
	}
	return c
}

// Refusal is a switch Parley will not make, with the sentence that says why.
type Refusal struct{ Msg string }

func (r *Refusal) Error() string { return r.Msg }

// Check refuses a switch of what (runner.SwitchModel or SwitchMode) to a
// value c does not offer, with a sentence naming what is allowed.
func (c Choices) Check(what, to string) error {
	switch what {
	case "model":
		if !slices.Contains(c.Models, to) {
			return &Refusal{fmt.Sprintf("Model %q is not allowed in this session; it may use %s. An owner can change the project's model in its settings.",
				to, strings.Join(c.Models, ", "))}
		}
	case "permission_mode":
		if !slices.Contains(c.Modes, to) {
			return &Refusal{fmt.Sprintf("Permission mode %q is not allowed to you in this project; you may pick %s. An owner can allow more modes in the project's settings.",
				to, strings.Join(c.Modes, ", "))}
		}
	default:
		return &Refusal{"Parley can switch a session's model or permission mode, nothing else."}
	}
	return nil
}
