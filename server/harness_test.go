package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"parley/askuser"
	"parley/cluster"
	"parley/gateway"
	"parley/guard"
	"parley/hub"
	"parley/metrics"
	"parley/oidclogin"
	"parley/runner"
	"parley/runner/fakeapi"
	"parley/runstore"
	"parley/store"
	"parley/store/pgtest"
	"parley/transcript"
	"parley/warm"
	"parley/worktree"
)

// TestMain lets the test binary stand in for `parley mcp-askuser` and
// `parley run-guard`: the runner starts its own executable with that
// argument, as the real binary.
// It is also BenchmarkFanout's viewer farm (viewerfarm_test.go).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == farmArg {
		os.Exit(farmMain())
	}
	if len(os.Args) > 1 && os.Args[1] == "run-guard" {
		code, err := guard.Main(os.Args[2:])
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
		}
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "mcp-askuser" {
		c, err := askuser.LoadConfig(os.Getenv("ASK_USER_CONFIG"))
		if err == nil {
			in, out := traceStdio(os.Stdin, os.Stdout)
			err = askuser.Serve(context.Background(), c, in, out)
		}
		if err != nil {
			os.Stderr.WriteString("mcp-askuser: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	pgtest.Main(m)
}

// env is one Parley server wired as `parley serve` wires it, against a fresh
// database, the real claude CLI and a scripted fake model.
type env struct {
	t       testing.TB
	reach   *reachEnv // nil unless envOptions.reach
	st      *store.Store
	srv     *Server
	sup     *runner.Supervisor
	fake    *fakeapi.Server
	web     *httptest.Server
	relay   *httptest.Server
	broker  *askuser.Broker
	dataDir string
	dbURL   string
	project store.Project // "Test project", where newSession creates sessions
	user    *testUser     // its member, signed in: dial and newSession act as them
	// published, with envOptions.stampPublish, is when each event was
	// published.
	published *publishStamps
	// pub is the runs' publisher, unmetered, as a restarted supervisor
	// takes it (runnerLike).
	pub *Publisher

	warm *warm.Pool // envOptions.warm's pool; nil = none
}

type envOptions struct {
	askTimeout time.Duration
	// askStdio has the project's runs reach ask_user through a `parley
	// mcp-askuser` child (the stdio transport) instead of Parley's own HTTP
	// endpoint, the default: for tests and benchmarks about that child.
	askStdio   bool
	perTurn    bool     // the fake model replays its script at every prompt (fakeapi.Server.PerTurn)
	env        []string // extra environment for claude and its mcp-askuser child
	quiet      bool     // log warnings and errors only
	reach      bool     // asks reach people: push, e-mail, Slack (reach_harness_test.go)
	askUserOff bool     // the server-wide ask_user switch is off
	pingPeriod time.Duration
	limits     Limits // per-user limits; zero = none
	maxRuns    int    // cap on live claude processes; 0 = none
	cpuRuns    int    // CPU budget: sessions working at once; 0 = none (runner/cpu.go)
	isolation  string // "uid": per-project uids (needs root); "bwrap": bubblewrap; "": none
	guard      bool   // runs start under run-guard, as serve starts them
	nice       int    // the runs' niceness (PARLEY_RUN_NICE)
	gitBin     string // git for the server's worktree commands; "" = git on PATH
	// stampPublish notes when each event is published, its batch written
	// (env.published; for the fan-out benchmark's stages).
	stampPublish bool
	gateway      gateway.Config // limits of the model gateway (its upstream is the fake model)

	// claudeBin wraps the CLI (a tee of its stdout, say); nil = the real one.
	claudeBin func(real string) string
	// runConfig, if set, changes the runs' config last (confinement tests).
	runConfig func(*runner.Config)
	// metrics, if set, is fed and served on /metrics as serve does it;
	// logTo, if set, gets the server's log lines too (ops_e2e_test.go).
	metrics *metrics.Metrics
	logTo   io.Writer
	// sso, if set, makes the server's OpenID Connect sign-in (oidc_op_test.go).
	sso func(*store.Store, *slog.Logger) *oidclogin.Provider
	// warm, if set, runs a pool of processes started ahead (warm_harness_test.go).
	warm *warm.Config
	// relayWrap, if set, wraps the relay's handler (BenchmarkAskLatency's
	// trace of /mcp-ask).
	relayWrap func(http.Handler) http.Handler
}

func newEnv(t testing.TB, sc fakeapi.Scenario, o envOptions) *env {
	t.Helper()
	claude := fakeapi.ClaudeBin(t)
	if o.claudeBin != nil {
		claude = o.claudeBin(claude)
	}
	if o.askTimeout == 0 {
		o.askTimeout = 300 * time.Second
	}
	ctx := context.Background()
	dbURL := pgtest.New(t)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	fake := fakeapi.New(sc)
	fake.PerTurn = o.perTurn
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	level := slog.LevelDebug
	if o.quiet {
		level = slog.LevelWarn
	}
	var logTo io.Writer = testWriter{t}
	if o.logTo != nil {
		logTo = io.MultiWriter(logTo, o.logTo)
	}
	log := slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: level}))
	e := &env{t: t, st: st, fake: fake, broker: askuser.NewBroker(), dataDir: dir, dbURL: dbURL}
	hub := hub.New()
	if d, err := time.ParseDuration(os.Getenv("PARLEY_BENCH_HOLD_PER_VIEWER")); err == nil {
		hub.HoldPerViewer = d // for A/B runs of the fan-out's hold
	}
	hubCtx, stopHub := context.WithCancel(ctx)
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(hubCtx) }()
	gwc := o.gateway
	gwc.Upstream, gwc.APIKey = fake.URL(), upstreamKey
	var notify gateway.NotifyFunc = func(id, text string) { e.sup.LimitReached(id, text) }
	gw, err := gateway.New(gwc, runstore.NewUsageSink(st), notify, log)
	if err != nil {
		t.Fatal(err)
	}
	rc := runner.Config{ClaudeBin: claude, SelfExe: self, Gateway: gw, Nice: o.nice,
		Env: append(append(runner.BaseEnv(os.Environ()), fake.Env(filepath.Join(dir, "claude"))...), o.env...)}
	if o.isolation == "" {
		o.isolation = os.Getenv("PARLEY_TEST_ISOLATE")
	}
	if o.isolation != "" {
		e.confine(&rc, o.isolation)
	}
	if o.guard {
		rc.GuardExe = rc.SelfExe
	}
	if n, err := strconv.Atoi(os.Getenv("PARLEY_TEST_RUN_NICE")); err == nil {
		rc.Nice = n // as PARLEY_RUN_NICE, for A/B runs of the benchmarks
	}
	if n, err := strconv.Atoi(os.Getenv("PARLEY_TEST_CPU_RUNS")); err == nil {
		o.cpuRuns = n // as PARLEY_CPU_RUNS, for A/B runs of the benchmarks
	}
	if o.runConfig != nil {
		o.runConfig(&rc)
	}
	// As serve does: the run loops write through the live pool, and a run
	// about to start reconciles its session's log first.
	e.pub = NewPublisher(hub)
	pub, journal := e.pub, runstore.NewJournal(st.Live())
	if o.metrics != nil {
		pub, journal = e.pub.Metered(o.metrics), runstore.NewMeteredJournal(st.Live(), o.metrics)
	}
	var runPub runner.Publisher = pub
	if o.stampPublish {
		e.published = &publishStamps{pub: pub, at: map[int64]time.Time{}}
		runPub = e.published
	}
	e.sup = runner.NewSupervisor(ctx, runner.Deps{
		Config:  rc,
		Journal: journal, Publisher: runPub, Broker: e.broker, Log: log, RuntimeDir: e.runtimeDir(),
		MaxRuns: o.maxRuns, CPURuns: o.cpuRuns, Queue: NewQueueObserver(hub), QueueStore: cluster.NewQueueStore(st), Recover: transcript.New(st, pub, log),
		StartGuard: WorktreeStartGuard(st),
	})
	var rch *Reach
	if o.reach {
		e.reach = newReachEnv(t, st, log)
		rch = e.reach.rch
	}
	e.relay = startRelay() // as serve runs it (relay_harness_test.go)
	var sso *oidclogin.Provider
	if o.sso != nil {
		sso = o.sso(st, log)
	}
	e.srv, err = New(ctx, Config{DataDir: dir, AskTimeout: o.askTimeout, AskUserEnabled: !o.askUserOff, PingPeriod: o.pingPeriod,
		RelayURL: e.relay.URL + "/ask", ModelURL: e.relay.URL, RunsConfined: o.isolation == "uid", Limits: o.limits}, Deps{Store: st, Supervisor: e.sup, Hub: hub, Publisher: e.pub, Broker: e.broker, Log: log, Gateway: gw, Metrics: o.metrics, Tools: rc.GuardTools(toolsOf(rc.Sandbox)), Git: worktree.New(o.gitBin), Reach: rch, SSO: sso})
	if err != nil {
		t.Fatal(err)
	}
	e.relay.Config.Handler = e.srv.RelayHandler()
	if o.relayWrap != nil {
		e.relay.Config.Handler = o.relayWrap(e.relay.Config.Handler)
	}
	e.web = httptest.NewServer(e.srv.Handler())
	e.startWarm(o.warm, log)
	if e.reach != nil {
		e.reach.start(t, e, e.web.URL)
	}
	t.Cleanup(func() {
		e.sup.Shutdown()
		e.web.CloseClientConnections()
		e.web.Close()
		e.relay.CloseClientConnections()
		e.relay.Close()
		stopHub()
		<-hubDone
	})
	e.project, err = st.CreateProject(ctx, "Test project", 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.askStdio {
		m := store.DefaultMCPSettings()
		m.AskTransport = "stdio"
		if err := st.SetProjectMCPSettings(ctx, e.project.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	e.user = e.member("you@example.com", "you", roleMember)
	return e
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newSession creates a session without starting claude.
func (e *env) newSession() store.Session {
	e.t.Helper()
	s, err := e.st.CreateSessionBy(e.t.Context(), e.project.ID, "test", e.user.Name, e.user.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// ws is a test browser tab on a session's WebSocket.
type ws struct {
	t      testing.TB
	conn   *websocket.Conn
	frames chan string
}

// dial opens a session's WebSocket as the env's signed-in member.
func (e *env) dial(sessionID string, after int64) *ws {
	e.t.Helper()
	return e.dialAs(e.user, sessionID, after)
}

// dialAs opens a session's WebSocket as u (nil: signed out) and says hello.
func (e *env) dialAs(u *testUser, sessionID string, after int64) *ws {
	e.t.Helper()
	w := e.dialPathAs(u, "/sessions/"+sessionID+"/ws")
	w.send(map[string]any{"action": "hello", "after": after})
	return w
}

// dialPathAs opens a WebSocket to path on the web server as u and reads its
// frames into w.frames.
func (e *env) dialPathAs(u *testUser, path string) *ws {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(e.web.URL, "http") + path
	conn, resp, err := websocket.DefaultDialer.Dial(url, e.header(u))
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial %s as %v: %v (status %d)", url, u, err, status)
	}
	w := &ws{t: e.t, conn: conn, frames: make(chan string, 4096)}
	go func() {
		defer close(w.frames)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			w.frames <- string(b)
		}
	}()
	e.t.Cleanup(func() { conn.Close() })
	return w
}

func (w *ws) send(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	if err := w.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		w.t.Fatal(err)
	}
}

// waitFor reads frames until one contains all of subs; it returns everything read.
func (w *ws) waitFor(timeout time.Duration, subs ...string) string {
	w.t.Helper()
	var seen strings.Builder
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				w.t.Fatalf("websocket closed while waiting for %q; got:\n%s", subs, seen.String())
			}
			seen.WriteString(f)
			if containsAll(seen.String(), subs) {
				return seen.String()
			}
		case <-deadline:
			w.t.Fatalf("timed out waiting for %q; got:\n%s", subs, seen.String())
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// waitInput waits until the session has a pending input and returns it.
func (e *env) waitInput(w *ws, sessionID string) store.Input {
	e.t.Helper()
	w.waitFor(60*time.Second, `class="item ask"`)
	ins, err := e.st.PendingInputs(e.t.Context(), sessionID)
	if err != nil || len(ins) != 1 {
		e.t.Fatalf("pending inputs = %v, %v; want one", ins, err)
	}
	return ins[0]
}

// prompt sends a prompt to a session through its WebSocket.
func (w *ws) prompt(text string) {
	w.send(map[string]any{"action": "prompt", "text": text})
}

// lastToolResult waits for n main requests and returns the tool_result of the last.
func (e *env) lastToolResult(n int) (string, bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 60*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, n); err != nil {
		e.t.Fatalf("waiting for %d model requests: %v (got %d)", n, err, len(e.fake.Requests()))
	}
	reqs := e.fake.Requests()
	_, text, isErr, ok := reqs[n-1].LastToolResult()
	if !ok {
		e.t.Fatalf("request %d has no tool_result", n)
	}
	return text, isErr
}
