package launch

import (
	"context"
	"time"

	"parley/runner"
	"parley/store"
)

// Options is how a session's process is started: in its project's
// workspace (files regenerated from the settings), with its own
// CLAUDE_CONFIG_DIR and the project's Claude options.
func (l *Launcher) Options(ctx context.Context, sess store.Session) (runner.Options, error) {
	p, err := l.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return runner.Options{}, err
	}
	workspace, err := SyncWorkspace(l.cfg.DataDir, p)
	if err != nil {
		return runner.Options{}, err
	}
	ask := l.cfg.AskUserEnabled && p.AskUserEnabled
	settings, err := l.sessionSettings(ctx, sess, p.ProjectSettings)
	if err != nil {
		return runner.Options{}, err
	}
	md, notice := workspaceInstructions(workspace)
	settings.AppendSystemPrompt = joinPrompt(settings.AppendSystemPrompt, md)
	o := runner.Options{
		Spec: runner.Spec{SessionID: sess.ID, ProjectID: sess.ProjectID, ClaudeSessionID: sess.ClaudeSessionID, Resume: sess.ClaudeStarted,
			Workspace: workspace, ConfigDir: l.ConfigDirOf(p), ExtraArgs: claudeArgs(settings, ask),
			Home: HomeDir(l.cfg.DataDir, p.ID), Instructions: settings.AppendSystemPrompt}, // a 0600 file, never argv
		AskTimeout: l.cfg.AskTimeout, PermissionTimeout: l.cfg.PermissionTimeout, IdleTimeout: l.cfg.IdleTimeout,
		ModelURL: l.cfg.ModelURL, MayPrompt: l.hooks.MayPrompt(sess.ProjectID),
	}
	if notice != "" {
		o.Notices = append(o.Notices, notice)
	}
	if err := l.askOptions(ctx, &o, p, ask); err != nil {
		return runner.Options{}, err
	}
	if o.Workspace, o.WritableDirs, err = l.sessionWorkspace(ctx, p, sess, workspace); err != nil {
		return runner.Options{}, err
	}
	if err := l.applyLimits(ctx, &o, sess); err != nil {
		return runner.Options{}, err
	}
	return o, nil
}

// askOptions sets how long the project's asks wait and how its runs
// reach ask_user.
func (l *Launcher) askOptions(ctx context.Context, o *runner.Options, p store.Project, ask bool) error {
	if p.PermissionTimeoutSeconds > 0 {
		o.PermissionTimeout = time.Duration(p.PermissionTimeoutSeconds) * time.Second
	}
	if p.AskTimeoutSeconds > 0 {
		o.AskTimeout = time.Duration(p.AskTimeoutSeconds) * time.Second
	}
	as, err := l.st.AskSettingsOf(ctx, p.ID)
	if err != nil {
		return err
	}
	o.AskMaxTimeout = time.Duration(as.MaxAskTimeoutSeconds) * time.Second
	if !ask {
		return nil
	}
	o.RelayURL = l.cfg.RelayURL
	m, err := l.st.ProjectMCPSettings(ctx, p.ID)
	// Over Parley's own streamable HTTP endpoint rather than a child process.
	o.AskOverHTTP = m.AskTransport == "http"
	return err
}

// ConfigDirOf is the CLAUDE_CONFIG_DIR of the project's runs: the
// server's one if it sets one, else the project's own.
func (l *Launcher) ConfigDirOf(p store.Project) string {
	if l.cfg.ClaudeConfigDir != "" {
		return l.cfg.ClaudeConfigDir
	}
	return ConfigDir(l.cfg.DataDir, p.ID)
}
