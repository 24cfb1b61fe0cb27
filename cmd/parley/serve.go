package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"parley/askuser"
	"parley/cluster"
	"parley/gateway"
	"parley/metrics"
	"parley/runner"
	"parley/server"
	"parley/store"
	"parley/transcript"
)

// config is Parley's configuration: environment variables, which flags may
// override.
type config struct {
	DatabaseURL     string
	Addr            string
	RelayAddr       string
	ClaudeBin       string
	DataDir         string
	ClaudeConfigDir string
	AskTimeout      time.Duration
	IdleTimeout     time.Duration
	StallTimeout    time.Duration
	AskUser         bool
	SecureCookies   bool
	LogLevel        string
	LeaseTTL        time.Duration    // replicas: how long a lapsed replica keeps its sessions
	DrainTimeout    time.Duration    // graceful shutdown: how long turns in flight may take
	MetricsToken    string           // bearer token for /metrics from other hosts or through a proxy; "" = loopback only
	MetricsLoopback metrics.Loopback // PARLEY_METRICS_LOOPBACK: which loopback clients need no token
	MaxRuns         int              // live claude processes at once (PARLEY_MAX_RUNS)
	RunNice         int              // CPU niceness of every run's process group (PARLEY_RUN_NICE)
	MaxTokens       int              // cap on a model request's max_tokens at the gateway (PARLEY_MAX_TOKENS; gatewayconfig.go)
	Limits          server.Limits    // per-user limits (limits.go)
	RunLimits       runLimits        // per-run cgroup limits and largest file (confine.go)
	isolationConfig
	dbURLPassword bool // --database-url carried a password (dburl.go)
}

// parseConfig reads the environment, then the flags.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := config{
		DatabaseURL:     getenv("DATABASE_URL"),
		Addr:            orDefault(getenv("PARLEY_ADDR"), "127.0.0.1:8080"),
		RelayAddr:       orDefault(getenv("PARLEY_RELAY_ADDR"), "127.0.0.1:0"),
		ClaudeBin:       getenv("PARLEY_CLAUDE_BIN"),
		DataDir:         orDefault(getenv("PARLEY_DATA_DIR"), defaultDataDir(getenv)),
		ClaudeConfigDir: getenv("CLAUDE_CONFIG_DIR"),
		AskTimeout:      300 * time.Second,
		IdleTimeout:     30 * time.Minute,
		StallTimeout:    10 * time.Minute,
		AskUser:         getenv("PARLEY_ASK_USER") != "off" && getenv("PARLEY_ASK_USER") != "false",
		LogLevel:        orDefault(getenv("PARLEY_LOG_LEVEL"), "info"),
		SecureCookies:   getenv("PARLEY_SECURE_COOKIES") == "1" || getenv("PARLEY_SECURE_COOKIES") == "true",
		isolationConfig: isolationConfig{Upstream: getenv("ANTHROPIC_BASE_URL"), APIKey: getenv("ANTHROPIC_API_KEY"),
			AuthToken: getenv("ANTHROPIC_AUTH_TOKEN"), Isolation: orDefault(getenv("PARLEY_ISOLATION"), "auto"),
			UIDRange: getenv("PARLEY_UID_RANGE")}, // "" = the installation's own (uidrange.go)
	}
	if err := parseGatewayLimits(&c, getenv); err != nil {
		return c, err
	}
	for name, dst := range map[string]*int{"PARLEY_PROJECT_RPM": &c.ProjectRPM, "PARLEY_USER_RPM": &c.UserRPM} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c, fmt.Errorf("%s: want a number of requests a minute, 0 for no limit", name)
			}
			*dst = n
		}
	}
	if v := getenv("PARLEY_ASK_TIMEOUT"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return c, fmt.Errorf("PARLEY_ASK_TIMEOUT: %w", err)
		}
		c.AskTimeout = d
	}
	c.MetricsToken = getenv("PARLEY_METRICS_TOKEN")
	lb, err := metricsLoopback(getenv("PARLEY_METRICS_LOOPBACK"), c.MetricsToken)
	if err != nil {
		return c, err
	}
	c.MetricsLoopback = lb
	c.LeaseTTL = 15 * time.Second
	if v := getenv("PARLEY_LEASE_TTL"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return c, fmt.Errorf("PARLEY_LEASE_TTL: %w", err)
		}
		c.LeaseTTL = d
	}
	c.DrainTimeout = 20 * time.Second
	if v := getenv("PARLEY_DRAIN_TIMEOUT"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return c, fmt.Errorf("PARLEY_DRAIN_TIMEOUT: %w", err)
		}
		c.DrainTimeout = d
	}
	if v := getenv("PARLEY_IDLE_TIMEOUT"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return c, fmt.Errorf("PARLEY_IDLE_TIMEOUT: %w", err)
		}
		c.IdleTimeout = d
	}
	if v := getenv("PARLEY_STALL_TIMEOUT"); v != "" {
		d, err := parseSeconds(v)
		if err != nil {
			return c, fmt.Errorf("PARLEY_STALL_TIMEOUT: %w", err)
		}
		c.StallTimeout = d
	}
	if err := parseLimits(&c, getenv); err != nil {
		return c, err
	}
	rl, err := parseRunLimits(getenv)
	if err != nil {
		return c, err
	}
	c.RunLimits = rl
	fs := flag.NewFlagSet("parley "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(dbURLFlag{&c.DatabaseURL, &c.dbURLPassword}, "database-url", "PostgreSQL URL (env DATABASE_URL; a password belongs there, not here); empty = a private PostgreSQL under the data directory")
	fs.StringVar(&c.Addr, "addr", c.Addr, "address to serve the web UI on (env PARLEY_ADDR)")
	fs.StringVar(&c.RelayAddr, "relay-addr", c.RelayAddr, "loopback address for the ask relay (env PARLEY_RELAY_ADDR)")
	fs.StringVar(&c.ClaudeBin, "claude", c.ClaudeBin, "path of the claude binary (env PARLEY_CLAUDE_BIN); empty = claude on PATH, else the pinned version is installed")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for workspaces, CLI state and the private database (env PARLEY_DATA_DIR)")
	fs.StringVar(&c.ClaudeConfigDir, "claude-config-dir", c.ClaudeConfigDir, "CLAUDE_CONFIG_DIR to give the CLI (env CLAUDE_CONFIG_DIR); empty = one per project under the data directory")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "end a session's claude process after this long with nothing to do; the next message resumes it (env PARLEY_IDLE_TIMEOUT, seconds; 0 = never)")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", c.StallTimeout, "interrupt a turn that prints nothing for this long, never while an ask is open; a project may set its own (env PARLEY_STALL_TIMEOUT, seconds; 0 = never)")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", c.DrainTimeout, "on SIGTERM, how long turns in flight may take to finish before their sessions are handed to another replica (env PARLEY_DRAIN_TIMEOUT, seconds)")
	fs.DurationVar(&c.AskTimeout, "ask-timeout", c.AskTimeout, "how long an ask_user question waits for an answer (env PARLEY_ASK_TIMEOUT, seconds)")
	fs.BoolVar(&c.AskUser, "ask-user", c.AskUser, "offer Claude the ask_user tool (env PARLEY_ASK_USER=off disables)")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", c.SecureCookies, "mark cookies Secure even on plain HTTP, for a TLS proxy in front (env PARLEY_SECURE_COOKIES=1)")
	fs.IntVar(&c.ProjectRPM, "project-rpm", c.ProjectRPM, "model requests a minute per project, through the gateway (env PARLEY_PROJECT_RPM; 0 = no limit)")
	fs.IntVar(&c.UserRPM, "user-rpm", c.UserRPM, "model requests a minute per user whose turn runs (env PARLEY_USER_RPM; 0 = no limit)")
	fs.StringVar(&c.Isolation, "isolation", c.Isolation, "how runs are confined: uid (per-project uids, needs root), bwrap (bubblewrap, started as the project's uid when Parley is root), auto (uid as root, else bwrap; refuses to start if neither works), off (unconfined; warned at every start) (env PARLEY_ISOLATION)")
	fs.StringVar(&c.UIDRange, "uid-range", c.UIDRange, "uids for projects' runs, FIRST-LAST; project N runs as FIRST+N (env PARLEY_UID_RANGE); empty = a random range kept for this installation")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (env PARLEY_LOG_LEVEL)")
	limitFlags(fs, &c)
	gatewayFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.MaxRuns < 1 {
		return c, errors.New("the cap on live claude processes (max-runs) must be at least 1")
	}
	if c.RunNice < 0 || c.RunNice > 19 {
		return c, fmt.Errorf("run-nice %d: want 0-19", c.RunNice)
	}
	if !slices.Contains([]string{"auto", "uid", "bwrap", "off"}, c.Isolation) {
		return c, fmt.Errorf("PARLEY_ISOLATION %q: want auto, uid, bwrap or off", c.Isolation)
	}
	if c.AskTimeout < time.Second {
		return c, errors.New("the ask timeout must be at least one second")
	}
	return c, nil
}

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parseConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, c.LogLevel)
	st, closeStore, err := openStore(ctx, c, log, false)
	if err != nil {
		return err
	}
	defer closeStore()
	if err := checkDiskCap(ctx, c); err != nil {
		return err
	}
	if err := firstAdminHint(ctx, st, c, log); err != nil {
		return err
	}
	claude, err := findClaude(ctx, c, log)
	if err != nil {
		return err
	}
	return serveWith(ctx, c, st, claude, log)
}

// serveWith runs the web server, the relay and the hub until ctx ends.
func serveWith(ctx context.Context, c config, st *store.Store, claude string, log *slog.Logger) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	relayLn, err := net.Listen("tcp", c.RelayAddr)
	if err != nil {
		return fmt.Errorf("relay listen: %w", err)
	}
	if ip := relayLn.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		relayLn.Close()
		return fmt.Errorf("relay address %s is not loopback", c.RelayAddr)
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		relayLn.Close()
		return fmt.Errorf("listen: %w", err)
	}
	// Each replica has its own runtime directory under the shared data
	// directory: the config files of other live replicas' runs are not its.
	// Config files that a crash left behind hold dead tokens: those of
	// this directory's older layout, and those of replicas no longer
	// running (a live replica, even one starting now, holds its dir's lock).
	rd, n, err := cluster.OpenRuntimeDir(ctx, st, filepath.Join(c.DataDir, "run"))
	if err != nil {
		return err
	}
	defer rd.Close()
	runtimeDir := rd.Path
	if n > 0 {
		log.Info("removed per-run ask_user config files left by an earlier run", "files", n)
	}
	broker := askuser.NewBroker()
	hub := server.NewHub()
	expiry := server.NewExpirer(st, log)
	runCtx, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	var sup *runner.Supervisor
	met := metrics.New(func() int { return sup.Count() }, func() int { return sup.Queued() })
	pub := server.NewMeteredPublisher(hub, met)
	if c.UIDRange, err = settleUIDRange(ctx, c, st, log); err != nil {
		return err
	}
	c.GatewaySocket = filepath.Join(runtimeDir, "gateway.sock") // how runs in bubblewrap reach the relay
	rc, gw, err := runEnvironment(ctx, c, st, claude, self, gateway.NotifyFunc(func(id, text string) { sup.LimitReached(id, text) }), log)
	if err != nil {
		return err
	}
	gatewayLn, err := listenGateway(rc.Sandbox, c.GatewaySocket)
	if err != nil {
		return err
	}
	// PARLEY_MAX_TOKENS: the cap on a model request's max_tokens.
	gw.SetMaxTokens(c.MaxTokens)
	rc.GuardExe = rc.SelfExe // no claude outlives this process (package guard)
	rc.Nice = c.RunNice      // PARLEY_RUN_NICE; the guard sets it
	// A cgroup and a pid namespace per run, their OOM score and file cap.
	defer confineRuns(c, &rc, log)()
	// Logs are reconciled with Claude's transcripts before runs start and
	// after a crash (see recoverLost).
	rec := transcript.New(st, pub, log)
	// Run loops write through the store's own small pool.
	sup = runner.NewSupervisor(runCtx, runner.Deps{
		Config:  rc,
		Journal: server.NewMeteredJournal(st.Live(), met), Publisher: pub,
		Broker: broker, Log: log, RuntimeDir: runtimeDir, RunEnded: expiry.Kick,
		MaxRuns: c.MaxRuns, Queue: server.NewQueueObserver(hub), Recover: rec, Line: cluster.NewLine(st),
		StartGuard: server.WorktreeStartGuard(st), // no run starts while a member merges its session's worktree
	})
	var srv *server.Server
	node := cluster.New(cluster.Config{TTL: c.LeaseTTL, DataDir: c.DataDir, RuntimeBase: filepath.Dir(runtimeDir)}, cluster.Deps{Store: st, Supervisor: sup,
		// Unmetered: the owner's replica counts its events once.
		Publisher: server.NewPublisher(hub), Log: log.With("replica", st.Replica()),
		TakenOver: func(n int) { met.TakenOver(n); recoverLost(ctx, srv, rec, log) },
		Starter:   func(id string) runner.Starter { return srv.SessionStarter(id) }, Local: hub})
	hub.Announce = node.Viewers       // this replica's viewers join the other replicas' presence lists
	sup.SetLeaseCheck(node.LeaseHeld) // runs write only while this replica surely holds its lease
	gw.SetLeaseCheck(node.LeaseHeld)  // and their claude talks to the model only then
	met.Lease(node.LeaseHeld, gw.Waiting)
	// A replica that starts takes over only replicas that lapsed.
	if err := node.Join(ctx); err != nil {
		return err
	}
	srv, err = server.New(ctx, server.Config{DataDir: c.DataDir, ClaudeConfigDir: c.ClaudeConfigDir,
		AskTimeout: c.AskTimeout, IdleTimeout: c.IdleTimeout, StallTimeout: c.StallTimeout, AskUserEnabled: c.AskUser, SecureCookies: c.SecureCookies,
		Limits: c.Limits, RelayURL: "http://" + relayLn.Addr().String() + "/ask", ModelURL: "http://" + relayLn.Addr().String(),
		RunsConfined: isUIDSandbox(rc.Sandbox), MetricsToken: c.MetricsToken, MetricsLoopback: c.MetricsLoopback},
		server.Deps{Store: st, Supervisor: sup, Runs: node, Stops: node, Hub: hub, Broker: broker, Metrics: met, Log: log, Expirer: expiry, Gateway: gw,
			Tools: rc.GuardTools(toolSandbox(rc.Sandbox))}) // a tool's leftovers die with it, as a run's
	if err != nil {
		return err
	}
	recoverLost(ctx, srv, rec, log)
	web := server.NewHTTPServer(srv.Handler())
	relay := &http.Server{Handler: srv.RelayHandler(), ReadHeaderTimeout: 10 * time.Second}
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return hub.Run(hubCtx) })
	nodeCtx, stopNode := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNode()
	g.Go(func() error { return node.Run(nodeCtx) })
	g.Go(func() error { return serveHTTP(web, ln) })
	g.Go(func() error { return serveHTTP(relay, relayLn) })
	if gatewayLn != nil {
		g.Go(func() error { return serveHTTP(relay, gatewayLn) })
	}
	g.Go(func() error { return expiry.Run(gctx, sup) })
	g.Go(func() error { return srv.ListenAnswers(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		// Runs first (Leave ends them): their last events reach Postgres and
		// the hub before the browsers are told to reconnect. Then the
		// replica's leases go, and any replica takes each session on its
		// next message.
		// Turns in flight finish first; sessions with work left go to the
		// other replicas at once.
		dctx, dcancel := context.WithTimeout(context.Background(), c.DrainTimeout+30*time.Second)
		if err := node.Drain(dctx, c.DrainTimeout); err != nil {
			log.Error("hand sessions over", "err", err)
		}
		dcancel()
		lctx, lcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := node.Leave(lctx); err != nil {
			log.Error("leave the cluster", "err", err)
		}
		lcancel()
		stopNode()
		stopHub()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return errors.Join(web.Shutdown(sctx), relay.Shutdown(sctx))
	})
	log.Info("parley listening", "url", "http://"+ln.Addr().String(), "replica", st.Replica(), "claude", claude, "data_dir", c.DataDir, "max_runs", c.MaxRuns)
	return g.Wait()
}

func serveHTTP(s *http.Server, ln net.Listener) error {
	if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openStore opens Parley's database with its migrations applied: the
// DATABASE_URL, else the private PostgreSQL under the data directory —
// with reuseRunning, the one a running server already started — else a
// private PostgreSQL started now. closeStore releases what it opened.
func openStore(ctx context.Context, c config, log *slog.Logger, reuseRunning bool) (st *store.Store, closeStore func(), err error) {
	if c.dbURLPassword {
		return nil, nil, errPasswordInArgs
	}
	dbURL, stop := c.DatabaseURL, func() error { return nil }
	if dbURL == "" && reuseRunning {
		dbURL = store.RunningEmbeddedURL(filepath.Join(c.DataDir, "postgres"))
	}
	if dbURL == "" {
		if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("data dir: %w", err)
		}
		log.Info("DATABASE_URL is not set: starting a private PostgreSQL under the data directory")
		if dbURL, stop, err = store.StartEmbedded(ctx, filepath.Join(c.DataDir, "postgres"), log); err != nil {
			return nil, nil, err
		}
	}
	stopDB := func() {
		if err := stop(); err != nil {
			log.Error("stop embedded postgres", "err", err)
		}
	}
	if err := store.Migrate(dbURL); err != nil {
		stopDB()
		return nil, nil, err
	}
	if st, err = store.Open(ctx, dbURL); err != nil {
		stopDB()
		return nil, nil, err
	}
	return st, func() { st.Close(); stopDB() }, nil
}

func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseConfig("migrate", args, getenv, stderr)
	if err != nil {
		return err
	}
	_, closeStore, err := openStore(ctx, c, newLogger(stderr, c.LogLevel), true)
	if err != nil {
		return err
	}
	closeStore()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func defaultDataDir(getenv func(string) string) string {
	if os.Geteuid() == 0 {
		// Not under /root (mode 0700): each project's uid must be able to
		// enter the data directory to reach its workspace.
		return "/var/lib/parley"
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "parley")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "parley")
	}
	return "parley-data"
}

// parseSeconds reads "300" or "5m".
func parseSeconds(v string) (time.Duration, error) {
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(v)
}
