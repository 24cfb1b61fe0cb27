package launch

import (
	"context"

	"parley/modeswitch"
	"parley/store"
)

// withSwitches lays the model and permission mode members switched the
// session to over its own options, where the project still allows them
// (modeswitch.ForStart): a switch made while no process was live, or
// before the process ended, holds for the next start.
func (l *Launcher) withSwitches(ctx context.Context, sess store.Session, p store.ProjectSettings, o store.SessionOptions) (store.SessionOptions, error) {
	sw, err := l.st.SessionSwitches(ctx, sess.ID)
	if err != nil || (sw.Model == "" && sw.Mode == "") {
		return o, err
	}
	ms, err := l.st.ProjectMCPSettings(ctx, sess.ProjectID)
	if err != nil {
		return o, err
	}
	return modeswitch.ForStart(p, o, ms, sw), nil
}
