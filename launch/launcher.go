// Package launch turns a session into how its Claude process starts
// (runner.Options): the project's workspace and its generated CLAUDE.md,
// the session's worktree, the Claude options laid over the project's,
// the ask settings, and the run's limits. It also owns the data
// directory's layout (paths.go).
package launch

import (
	"context"
	"time"

	"parley/runner"
	"parley/store"
	"parley/worktree"
)

// Config is what the server's configuration says about runs.
type Config struct {
	DataDir           string        // workspaces and per-project CLI config live here
	ClaudeConfigDir   string        // CLAUDE_CONFIG_DIR for every run; "" = one per project
	AskTimeout        time.Duration // how long an ask_user question waits
	PermissionTimeout time.Duration // permission, plan and AskUserQuestion asks; 0 = no deadline
	IdleTimeout       time.Duration // a process with nothing to do ends; 0 = never
	StallTimeout      time.Duration // a silent turn is interrupted, unless the project sets its own
	AskUserEnabled    bool          // server-wide switch for the ask_user tool
	RelayURL          string        // loopback URL the ask relay listens on
	ModelURL          string        // loopback base URL of the model gateway
}

// Hooks are what a start asks of the web server: who may prompt, the disk
// quota's verdict, git for a project, and how a refusal reads. The server
// installs them (Launcher.Use) when it is made, after the cluster that
// already starts runs with this Launcher.
type Hooks struct {
	// MayPrompt says whether a user may send turns in the project now
	// (runner.Options.MayPrompt).
	MayPrompt func(projectID int64) func(ctx context.Context, userID int64) (bool, error)
	// DiskCap is the file size cap of the project's runs (0 = none), or
	// the refusal while the project is over its disk quota.
	DiskCap func(ctx context.Context, projectID int64, l store.RunLimits) (int64, error)
	// Git is git for the project's repository and worktrees.
	Git func(p store.Project) *worktree.Git
	// Refused is the error that tells the member a start is refused, with
	// a sentence that says why and what to do.
	Refused func(sentence string) error
}

// Launcher turns sessions into their runs' options.
type Launcher struct {
	cfg   Config
	st    *store.Store
	log   logger
	hooks Hooks
}

// logger is the part of *slog.Logger a start uses.
type logger interface {
	Info(msg string, args ...any)
}

// New returns a Launcher; it starts nothing before Use gives it its hooks.
func New(cfg Config, st *store.Store, log logger) *Launcher {
	return &Launcher{cfg: cfg, st: st, log: log}
}

// Use installs the web server's hooks.
func (l *Launcher) Use(h Hooks) { l.hooks = h }

// Starter gives the session's run options when its process must start.
func (l *Launcher) Starter(sess store.Session) runner.Starter {
	return func(ctx context.Context) (runner.Options, error) { return l.Options(ctx, sess) }
}

// SessionStarter gives the run options of a session known by id only (a
// request another replica forwarded).
func (l *Launcher) SessionStarter(sessionID string) runner.Starter {
	return func(ctx context.Context) (runner.Options, error) {
		sess, err := l.st.GetSession(ctx, sessionID)
		if err != nil {
			return runner.Options{}, err
		}
		return l.Options(ctx, sess)
	}
}
