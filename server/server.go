// Package server is Parley's HTTP surface: pages, the session WebSocket
// and the ask relay; the frames it renders reach the browsers through the
// hub (package hub).
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"parley/askuser"
	"parley/board"
	"parley/cgroup"
	"parley/clientip"
	"parley/hub"
	"parley/launch"
	"parley/metrics"
	"parley/oidclogin"
	"parley/quota"
	"parley/reach/mail"
	"parley/runner"
	"parley/runstore"
	"parley/store"
	"parley/warm"
	"parley/worktree"
)

// Config is the server's part of Parley's configuration.
type Config struct {
	DataDir         string        // workspaces and per-project CLI config live here
	ClaudeConfigDir string        // CLAUDE_CONFIG_DIR for every run; "" = one per project
	AskTimeout      time.Duration // how long an ask_user question waits
	// PermissionTimeout is how long permission, plan and AskUserQuestion
	// asks wait before they are denied; 0 = no deadline. Until projects
	// carry their own ask settings it applies to every project.
	PermissionTimeout time.Duration
	// PingPeriod is how often the WebSockets ping their browser, and with it
	// re-check that the watcher may still watch. 0 = every 54 s.
	PingPeriod time.Duration
	// IdleTimeout ends a session's process after this long with nothing to
	// do; the next message resumes it. 0 = never.
	IdleTimeout time.Duration
	// StallTimeout interrupts a turn that prints nothing for this long
	// (never while an ask is open), unless the project sets its own.
	// 0 = no watchdog.
	StallTimeout   time.Duration
	AskUserEnabled bool   // server-wide switch for the ask_user tool
	RelayURL       string // loopback URL the ask relay listens on
	ModelURL       string // loopback base URL of the model gateway; "" = runs use the environment's
	// RunsConfined says runs start as their project's own uid, not as
	// Parley's (root): the CLI then allows bypassPermissions.
	RunsConfined  bool
	SecureCookies bool   // set Secure on cookies even without TLS here (a TLS proxy in front)
	Limits        Limits // per-user limits (limits.go); the zero value limits nothing
	MetricsToken  string // bearer token for /metrics from other hosts or through a proxy; "" = loopback only
	// MetricsLoopback says which loopback clients of /metrics need no
	// token; the zero value admits only Parley's own uid and root.
	MetricsLoopback metrics.Loopback
	// RunLimits are the server's cgroup limits of a project's runs: each
	// project's unless it sets its own, and the most an owner may set
	// (limits_run.go). ProjectDisk is each project's disk quota unless
	// it sets its own (0 = none), measured every DiskEvery (0 = 1 s)
	// while the project has a live run (limits_disk.go).
	RunLimits   cgroup.Limits
	ProjectDisk int64
	// DiskReserve is what the data dir's file system keeps free
	// (quota.Config.Reserve: 0 = its default, < 0 = none).
	DiskReserve int64
	DiskEvery   time.Duration

	// TrustedProxies are the reverse proxies whose forwarding headers say
	// who the client is (PARLEY_TRUSTED_PROXIES); the zero value trusts none.
	TrustedProxies clientip.Resolver

	// Mail is the SMTP server invitations and password resets are e-mailed
	// through (PARLEY_SMTP_URL); nil = the links are only shown to copy.
	Mail *mail.Config
	// PublicURL is the site's address in those links (PARLEY_PUBLIC_URL);
	// "" = the scheme and host the admin's request came to.
	PublicURL string
}

// Launch is what the configuration says about runs (package launch).
func (c Config) Launch() launch.Config {
	return launch.Config{DataDir: c.DataDir, ClaudeConfigDir: c.ClaudeConfigDir, AskTimeout: c.AskTimeout,
		PermissionTimeout: c.PermissionTimeout, IdleTimeout: c.IdleTimeout, StallTimeout: c.StallTimeout,
		AskUserEnabled: c.AskUserEnabled, RelayURL: c.RelayURL, ModelURL: c.ModelURL}
}

// Server holds what the handlers need.
type Server struct {
	cfg    Config
	st     *store.Store
	sup    *runner.Supervisor
	runs   Runs  // where prompts, answers and stops go: the cluster, or sup
	stops  Stops // session and project stops and access changes, on every replica
	hub    *hub.Hub
	boards *board.Feed // keeps sidebars and boards live (board.go)
	broker *askuser.Broker
	// metrics is served on /metrics; nil = none.
	metrics *metrics.Metrics
	// replaySlots bounds the catch-up pages rendered at once, so a storm
	// of page loads leaves CPU to the live streams.
	replaySlots chan struct{}
	gw          http.Handler
	expiry      *runstore.Expirer // nil when asks never expire (tests)
	log         *slog.Logger
	mcp         http.Handler // the MCP endpoint, /mcp
	git         *worktree.Git
	tools       ToolSandbox
	// decoyHash is a bcrypt hash compared against when a login names no
	// account, made on first use (it takes a quarter of a second).
	decoyHash func() string
	lim       *limiters
	disk      *quota.Watcher // projects' disk use against their quota (limits_disk.go)
	launcher  *launch.Launcher
	reach     *Reach              // nil = asks reach only open pages
	sso       *oidclogin.Provider // nil = no OpenID Connect sign-in (oidc.go)
	warm      *warm.Pool          // processes started ahead for new sessions; nil = none (warm.go)
}

// Deps are the server's collaborators.
type Deps struct {
	Store      *store.Store
	Supervisor *runner.Supervisor
	// Runs routes prompts, answers and stops to the replica that owns the
	// session (cluster.Node); nil = the Supervisor, one replica.
	Runs Runs
	// Stops reaches every replica (cluster.Node); nil = this one only.
	Stops Stops
	Hub   *hub.Hub
	// Publisher is the runs' publisher: its stream state reads the log
	// where it did not see a stream start (render_stream.go); nil = none.
	Publisher *Publisher
	Broker    *askuser.Broker
	// Metrics is served on /metrics; nil = none.
	Metrics *metrics.Metrics
	Log     *slog.Logger
	Gateway http.Handler      // the model gateway, served on the relay listener; nil = none
	Expirer *runstore.Expirer // optional: told when a project's expiry setting changes
	Git     *worktree.Git     // nil = git on PATH
	// Tools confines the tools Parley runs on a project's files for
	// itself (git on its repository) as the project's runs are confined;
	// nil = no isolation.
	Tools ToolSandbox
	// Launcher turns a session into its run's options (package launch);
	// New installs the server's hooks in it. nil = one made from Config.
	Launcher *launch.Launcher
	// Reach brings asks to people who are not looking (package reach);
	// nil = only open pages show them.
	Reach *Reach
	// SSO is OpenID Connect sign-in (package oidclogin); nil = none.
	SSO *oidclogin.Provider
	// Warm keeps processes started ahead for new sessions (package
	// warm), made with Launcher; nil = every start is cold.
	Warm *warm.Pool
}

// ToolSandbox confines a tool Parley runs on a project's files: as the
// project's uid, or in its bubblewrap sandbox (package sandbox).
type ToolSandbox interface {
	ConfineTool(cmd *exec.Cmd, spec runner.Spec) error
}

// New returns a Server.
func New(ctx context.Context, cfg Config, d Deps) (*Server, error) {
	decoy := sync.OnceValue(func() string {
		h, _ := HashPassword(randomToken()[:32])
		return h
	})
	runs := d.Runs
	if runs == nil {
		runs = d.Supervisor
	}
	if d.Git == nil {
		d.Git = worktree.New("")
	}
	s := &Server{cfg: cfg, st: d.Store, sup: d.Supervisor, runs: runs, hub: d.Hub, metrics: d.Metrics,
		replaySlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1)), broker: d.Broker, expiry: d.Expirer, gw: d.Gateway, log: d.Log, decoyHash: decoy,
		lim: newLimiters(cfg.Limits), git: d.Git, tools: d.Tools, launcher: d.Launcher, reach: d.Reach, sso: d.SSO, warm: d.Warm}
	if s.launcher == nil {
		s.launcher = launch.New(cfg.Launch(), d.Store, d.Log)
	}
	if d.Supervisor != nil && d.Store != nil {
		d.Supervisor.SetAheadYield(worktreeYield(d.Store)) // a start ahead gives way to a merge (worktrees.go)
	}
	s.launcher.Use(launch.Hooks{MayPrompt: s.mayPrompt, DiskCap: s.diskCap, Git: s.gitOf,
		Refused: func(msg string) error { return &httpError{http.StatusForbidden, msg} }})
	if d.Publisher != nil && d.Store != nil {
		// The publisher reads which message streams from the log when it
		// did not see it start (render_stream.go): live traffic.
		d.Publisher.streams.setResolve(d.Store.Live().StreamOpenAt)
	}
	if d.Reach != nil {
		d.Reach.Devices.Actor = s.actor
		if d.Publisher != nil {
			d.Publisher.hooks.onAsk = s.pokeReach
		}
	}
	if s.stops = d.Stops; s.stops == nil {
		s.stops = localStops{sup: d.Supervisor, hub: d.Hub}
	}
	s.boards = board.NewFeed(d.Store, hubPages{d.Hub}, d.Log)
	s.mcp = s.MCPHandler(ctx)
	s.disk = s.newDiskWatcher()
	return s, nil
}

// Runs is what carries a member's prompts, answers and stops to a
// session's process.
type Runs interface {
	Prompt(ctx context.Context, sessionID string, start runner.Starter, text string, by runner.Author) error
	Answer(ctx context.Context, sessionID string, start runner.Starter, inputID string, resp runner.Response) error
	Interrupt(ctx context.Context, sessionID, by string) error
}

// starter gives the session's run options when its process must start.
func (s *Server) starter(sess store.Session) runner.Starter {
	return s.warm.Starter(sess.ID, s.launcher.Starter(sess)) // a process started ahead, if it took one
}

// mayPrompt says whether a user may send turns in the project now, as the
// page decides it: a runner asks before it sends a turn that waited, and
// when membership changes (Options.MayPrompt).
func (s *Server) mayPrompt(projectID int64) func(ctx context.Context, userID int64) (bool, error) {
	return func(ctx context.Context, userID int64) (bool, error) {
		u, err := s.st.UserByID(ctx, userID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil // the account is gone
		} else if err != nil {
			return false, err
		}
		_, err = s.checkAccess(ctx, viewer{ID: u.ID, Name: u.DisplayName(), Admin: u.IsAdmin}, projectID, actPrompt)
		var he *httpError
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, errNotFound) || errors.As(err, &he):
			return false, nil
		}
		return false, err
	}
}

// pingEvery is the WebSockets' ping period.
func (s *Server) pingEvery() time.Duration {
	if s.cfg.PingPeriod > 0 {
		return s.cfg.PingPeriod
	}
	return pingPeriod
}
