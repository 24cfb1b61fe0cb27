package modeswitch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"parley/act"
	"parley/runner"
	"parley/slash"
	"parley/store"
)

// Runs switches a session's live process, or records the switch when none
// is live (runner.Supervisor).
type Runs interface {
	Switch(ctx context.Context, projectID int64, sessionID string, sw runner.Switch) error
}

// Switcher switches sessions' models and permission modes.
type Switcher struct {
	st   *store.Store
	runs Runs
}

// New returns a Switcher that reads and keeps switches in st and makes
// them in runs.
func New(st *store.Store, runs Runs) *Switcher { return &Switcher{st: st, runs: runs} }

// Offer is what a session's header shows: the current model and mode, and
// what they may be switched to.
type Offer struct {
	Choices
	Model, Mode string
}

// Offer reads the session's current model and permission mode (its log,
// else what its next start will use) and what an owner (owner true) or a
// member may switch them to.
func (s *Switcher) Offer(ctx context.Context, sess store.Session, owner bool) (Offer, error) {
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return Offer{}, err
	}
	o, err := s.st.GetSessionOptions(ctx, sess.ID)
	if err != nil {
		return Offer{}, err
	}
	ms, err := s.st.ProjectMCPSettings(ctx, sess.ProjectID)
	if err != nil {
		return Offer{}, err
	}
	cur, err := s.st.CurrentMode(ctx, sess.ID)
	if err != nil {
		return Offer{}, err
	}
	sw, err := s.st.SessionSwitches(ctx, sess.ID)
	if err != nil {
		return Offer{}, err
	}
	next := ForStart(p.ProjectSettings, o, ms, sw)
	return Offer{Choices: ChoicesFor(p.ProjectSettings, o, ms, owner),
		Model: first(cur.Model, next.Model, p.Model, "default"),
		Mode:  first(cur.Mode, next.PermissionMode, p.PermissionMode, "default")}, nil
}

// Switch switches what (runner.SwitchModel or SwitchMode) of the session
// to to, on behalf of by: refused with a *Refusal unless the offer holds
// to; made in the live process (or recorded for the next start), then
// kept for the session's next start.
func (s *Switcher) Switch(ctx context.Context, sess store.Session, by string, owner bool, what, to string) error {
	off, err := s.Offer(ctx, sess, owner)
	if err != nil {
		return err
	}
	if err := off.Check(what, to); err != nil {
		return err
	}
	from := off.Model
	if what == runner.SwitchMode {
		from = off.Mode
	}
	if from == to || (what == runner.SwitchModel && slices.Contains(families, to) && strings.HasPrefix(from, "claude-"+to+"-")) {
		return &Refusal{fmt.Sprintf("The session already uses %s.", to)}
	}
	err = s.runs.Switch(ctx, sess.ProjectID, sess.ID, runner.Switch{What: what, From: from, To: to, By: by})
	if se, ok := errors.AsType[*runner.SwitchError](err); ok {
		return refusalOf(se, to)
	}
	if errors.Is(err, runner.ErrRunEnded) {
		return &Refusal{"Claude's process ended during the switch; try again."}
	}
	if err != nil {
		return err
	}
	return s.st.SetSessionSwitch(ctx, sess.ID, what, to)
}

// refusalOf says in a sentence why the CLI refused a switch (its
// error_code, as measured on 2.1.328).
func refusalOf(se *runner.SwitchError, to string) error {
	switch se.Code {
	case "bypass_not_launched":
		return &Refusal{"Claude was started with permission checks, so it cannot turn them off while it runs; start a new session in bypassPermissions mode instead."}
	case "check_failed":
		return &Refusal{fmt.Sprintf("Claude could not use model %q (%s); pick another.", to, se.Msg)}
	}
	return &Refusal{fmt.Sprintf("Claude refused the switch to %s: %s", to, se.Msg)}
}

// TypedModel reads a prompt "/model NAME" as a switch to NAME: the CLI
// would apply it itself (measured), so Parley makes it a switch, checked,
// recorded and kept like the header menu's.
func TypedModel(text string) (string, bool) {
	name, args, ok := slash.Parse(text)
	if !ok || name != "model" || args == "" || slices.Contains([]rune(args), ' ') || slices.Contains([]rune(args), '\n') {
		return "", false
	}
	return args, true
}

// ForStart lays the session's switches over its own options for its next
// start: the model if its pin still allows it (the pin may have changed
// since), the mode if the project still offers it to its owners.
func ForStart(p store.ProjectSettings, o store.SessionOptions, ms store.MCPSettings, sw store.SessionMode) store.SessionOptions {
	c := ChoicesFor(p, o, ms, true)
	if sw.Model != "" && sw.Model != "default" && slices.Contains(c.Models, sw.Model) {
		o.Model = sw.Model
	}
	if sw.Mode != "" && slices.Contains(c.Modes, sw.Mode) && slices.Contains(act.PermissionModes, sw.Mode) {
		o.PermissionMode = sw.Mode
	}
	return o
}

// first is the first of vs that is not "".
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
