package launch

import (
	"context"
	"slices"
	"strings"

	"parley/store"
)

// WithSessionOptions lays a session's own options over its project's: the
// tool lists grow, the rest replace.
func WithSessionOptions(p store.ProjectSettings, o store.SessionOptions) store.ProjectSettings {
	if o.Model != "" {
		p.Model = o.Model
	}
	if o.PermissionMode != "" {
		p.PermissionMode = o.PermissionMode
	}
	p.AllowedTools = append(slices.Clone(p.AllowedTools), o.AllowedTools...)
	p.DisallowedTools = append(slices.Clone(p.DisallowedTools), o.DisallowedTools...)
	if o.MaxTurns > 0 {
		p.MaxTurns = o.MaxTurns
	}
	if o.SystemPrompt != "" {
		p.AppendSystemPrompt = strings.TrimSpace(p.AppendSystemPrompt + "\n\n" + o.SystemPrompt)
	}
	return p
}

// sessionSettings are the Claude options of a session's runs.
func (l *Launcher) sessionSettings(ctx context.Context, sess store.Session, p store.ProjectSettings) (store.ProjectSettings, error) {
	o, err := l.st.GetSessionOptions(ctx, sess.ID)
	if err != nil {
		return p, err
	}
	if o, err = l.withSwitches(ctx, sess, p, o); err != nil {
		return p, err
	}
	return WithSessionOptions(p, o), nil
}
