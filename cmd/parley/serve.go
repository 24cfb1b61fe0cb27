package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"parley/askuser"
	"parley/audit"
	"parley/cluster"
	"parley/hub"
	"parley/launch"
	"parley/metrics"
	"parley/runner"
	"parley/runstore"
	"parley/server"
	"parley/store"
	"parley/transcript"
	"parley/warm"
)

func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	c, err := parseConfig("serve", args, getenv, stderr)
	if err != nil {
		return err
	}
	log := c.logger(stderr)
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
	wit, err := audit.OpenWitness(filepath.Join(c.DataDir, audit.WitnessFile), log) // the audit chain's head outside Postgres (docs/audit.md)
	if err != nil {
		return err
	}
	st.OnAuditAppend(wit.Note)
	if n > 0 {
		log.Info("removed per-run ask_user config files left by an earlier run", "files", n)
	}
	broker := askuser.NewBroker()
	hub := hub.New()
	pubs := server.NewPublisher(hub) // renders each event once for the hub
	expiry := runstore.NewExpirer(st, log)
	runCtx, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	met := metrics.New(nil, nil) // the runs' gauges once the supervisor is made (met.Runs)
	pub := pubs.Metered(met)
	c.GatewaySocket = filepath.Join(runtimeDir, "gateway.sock") // how runs in bubblewrap reach the relay
	if c.UIDRange, err = settleUIDRange(ctx, c, st, log); err != nil {
		return err
	}
	// The gateway's notifier is the supervisor, made with it (gw.SetNotifier).
	rc, gw, err := runEnvironment(ctx, c, st, claude, self, nil, log)
	if err != nil {
		return err
	}
	// PARLEY_MAX_TOKENS: the cap on a model request's max_tokens.
	gw.SetMaxTokens(c.MaxTokens)
	gatewayLn, err := listenGateway(rc.Sandbox, c.GatewaySocket)
	if err != nil {
		return err
	}
	// No claude outlives this process (package guard): parley-guard when
	// it is installed beside parley, else parley's own run-guard. The guard
	// starts as Parley's user (root with isolation), so it runs from where
	// parley is, not from the copy a sandbox makes for the projects' uids.
	rc.GuardExe = rc.SelfExe
	if small := runner.GuardBeside(self); small != self {
		rc.GuardExe = small
	}
	rc.Nice = c.RunNice // PARLEY_RUN_NICE; the guard sets it
	// A cgroup and a pid namespace per run, their OOM score and file cap.
	defer confineRuns(c, &rc, log)()
	// Logs are reconciled with Claude's transcripts before runs start and
	// after a crash (see recoverLost).
	rec := transcript.New(st, pub, log)
	// Run loops write through the store's own small pool.
	sup := runner.NewSupervisor(runCtx, runner.Deps{
		Config:  rc,
		Journal: runstore.NewMeteredJournal(st.Live(), met), Publisher: pub,
		Broker: broker, Log: log, RuntimeDir: runtimeDir, RunEnded: expiry.Kick,
		MaxRuns: c.MaxRuns, CPURuns: c.CPURuns, Queue: server.NewQueueObserver(hub), Recover: rec, QueueStore: cluster.NewQueueStore(st),
		StartGuard: server.WorktreeStartGuard(st), // no run starts while a member merges its session's worktree
	})
	// Runs start with the options the launcher gives (package launch),
	// the cluster's as the pages'.
	sc := server.Config{DataDir: c.DataDir, ClaudeConfigDir: c.ClaudeConfigDir,
		AskTimeout: c.AskTimeout, IdleTimeout: c.IdleTimeout, StallTimeout: c.StallTimeout, AskUserEnabled: c.AskUser, SecureCookies: c.SecureCookies,
		Limits: c.Limits, RelayURL: "http://" + relayLn.Addr().String() + "/ask", ModelURL: "http://" + relayLn.Addr().String(),
		RunsConfined: isUIDSandbox(rc.Sandbox), MetricsToken: c.MetricsToken, MetricsLoopback: c.MetricsLoopback,
		RunLimits: c.RunLimits.Cgroup, ProjectDisk: c.RunLimits.ProjectDisk} // per-project limits' defaults and owners' ceiling
	sc.DiskReserve = c.RunLimits.DiskReserve // free disk kept for the database (quota/free.go)
	sc.TrustedProxies = c.TrustedProxies     // whose forwarding headers name the client (package clientip)
	launcher := launch.New(sc.Launch(), st, log)
	// Processes started ahead for new sessions (package warm).
	pool := warm.New(c.Warm, sup, launcher, log)
	met.Runs(sup.Count, sup.Queued) // the supervisor writes through met; met counts its runs
	gw.SetNotifier(sup)             // a session that reaches a limit at the gateway is told so by its run
	node := cluster.New(cluster.Config{TTL: c.LeaseTTL, DataDir: c.DataDir, RuntimeBase: filepath.Dir(runtimeDir)}, cluster.Deps{Store: st, Supervisor: sup,
		// Unmetered: the owner's replica counts its events once.
		Publisher: pubs, Log: log.With("replica", st.Replica()),
		TakenOver: met.TakenOver, // until the server exists (OnTakenOver): its first recoverLost covers Join's
		Starter:   launcher.SessionStarter, Local: hub})
	hub.Announce = node.Viewers       // this replica's viewers join the other replicas' presence lists
	sup.SetLeaseCheck(node.LeaseHeld) // runs write only while this replica surely holds its lease
	gw.SetLeaseCheck(node.LeaseHeld)  // and their claude talks to the model only then
	met.Lease(node.LeaseHeld, gw.Waiting)
	// A replica that starts takes over only replicas that lapsed.
	if err := node.Join(ctx); err != nil {
		return err
	}
	// Asks reach people who are not looking: push, Slack, webhook, e-mail.
	if err := checkReach(c.Reach); err != nil {
		return err
	}
	rch, setActs, err := newReach(ctx, c.Reach, ln.Addr().String(), st, log)
	if err != nil {
		return err
	}
	// Single sign-on through an OpenID Connect provider (oidc.go); nil = none.
	lc, err := c.OIDC.loginConfig(c.Reach.publicURL(ln.Addr().String()), c.SecureCookies)
	if err != nil {
		return err
	}
	sso, err := newSSO(ctx, lc, c.OIDC.TokenKey, c.DataDir, st, log)
	if err != nil {
		return err
	}
	sc.Mail, sc.PublicURL = accountMail(c.Reach) // invitation and reset links (package accounts)
	srv, err := server.New(ctx, sc,
		server.Deps{Store: st, Supervisor: sup, Runs: node, Stops: node, Hub: hub, Publisher: pubs, Broker: broker, Metrics: met, Log: log, Expirer: expiry, Gateway: gw,
			Tools:    rc.GuardTools(toolSandbox(rc.Sandbox)), // a tool's leftovers die with it, as a run's
			Launcher: launcher, Reach: rch, SSO: sso, Warm: pool})
	if err != nil {
		return err
	}
	setActs(srv.Acts())                                                                 // token, e-mail and Slack answers go the pages' way
	node.OnTakenOver(func(n int) { met.TakenOver(n); recoverLost(ctx, srv, rec, log) }) // later takeovers
	recoverLost(ctx, srv, rec, log)
	web := server.NewHTTPServer(srv.Handler())
	relay := relayServer(srv.RelayHandler()) // idle and header timeouts (isolation.go)
	hubCtx, stopHub := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHub()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return hub.Run(hubCtx) })
	g.Go(func() error { return wit.Run(hubCtx) }) // until the drain's audit rows are witnessed too
	nodeCtx, stopNode := context.WithCancel(context.WithoutCancel(ctx))
	defer stopNode()
	g.Go(func() error { return node.Run(nodeCtx) })
	g.Go(func() error { return serveHTTP(web, ln) })
	g.Go(func() error { return serveHTTP(relay, perPeer(relayLn)) })
	if gatewayLn != nil {
		g.Go(func() error { return serveHTTP(relay, perPeer(gatewayLn)) })
	}
	g.Go(func() error { return expiry.Run(gctx, sup) })
	g.Go(func() error { return srv.ListenAnswers(gctx) })
	g.Go(func() error { return srv.WatchBoards(gctx) }) // sidebars and boards, live (package board)
	g.Go(func() error { rch.Reacher.Run(gctx); return nil })
	if sso != nil {
		g.Go(func() error { sso.Run(gctx); return nil }) // re-checks sign-ins with the provider
	}
	g.Go(func() error { return srv.WatchDisk(gctx) }) // projects' disk quotas (server/limits_disk.go)
	// The pool kills what it started ahead when it ends.
	g.Go(func() error { return pool.Run(gctx) })
	g.Go(func() error { return srv.SessionDeleter().Run(gctx) }) // retention: idle sessions deleted, one replica at a time
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
	_, closeStore, err := openStore(ctx, c, c.logger(stderr), true)
	if err != nil {
		return err
	}
	closeStore()
	fmt.Fprintln(stdout, "migrations applied")
	return nil
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
