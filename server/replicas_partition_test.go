package server

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// dbProxy puts a cutProxy between one replica and Postgres (a Unix socket
// directory of its own, or a loopback port); url is the replica's
// DATABASE_URL.
func dbProxy(t *testing.T, dbURL string) (p *cutProxy, url string) {
	t.Helper()
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	var ln net.Listener
	var network, target string
	if dir := q.Get("host"); strings.HasPrefix(dir, "/") {
		port := q.Get("port")
		if port == "" {
			port = "5432"
		}
		name := ".s.PGSQL." + port
		network, target = "unix", filepath.Join(dir, name)
		mine := t.TempDir()
		if err := os.Chmod(mine, 0o755); err != nil {
			t.Fatal(err)
		}
		ln, err = net.Listen("unix", filepath.Join(mine, name))
		q.Set("host", mine)
	} else {
		network, target = "tcp", u.Host
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			u.Host = ln.Addr().String()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = q.Encode()
	return newRelayProxy(t, ln, network, target), u.String()
}

// modelTap forwards a replica's model traffic to the fake model and keeps
// the request bodies that passed.
type modelTap struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newModelTap(t *testing.T, fake string) *modelTap {
	target, err := neturl.Parse(fake)
	if err != nil {
		t.Fatal(err)
	}
	m := &modelTap{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		m.bodies = append(m.bodies, body)
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// passed counts the requests that passed holding sub.
func (m *modelTap) passed(sub string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, b := range m.bodies {
		if bytes.Contains(b, []byte(sub)) {
			n++
		}
	}
	return n
}

// TestFaultReplicaCutOffFromDatabase: replica A, cut off from Postgres
// while its claude runs a tool, loses its lease and B takes the session
// over and has Claude go on. A's claude, still alive, finishes the tool,
// and its next model request (with the tool's result) must not reach the
// model: A's gateway holds model traffic while A's lease is in doubt, so
// two Claudes never work one session. When A reaches Postgres again, its
// heartbeat fences the run: its claude ends and the held request is
// refused, never sent.
func TestFaultReplicaCutOffFromDatabase(t *testing.T) {
	const slept = "SLEPT-THROUGH-THE-PARTITION"
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Running it.", ToolName: "Bash", ToolInput: map[string]any{"command": "sleep 5; echo " + slept, "description": "wait"}},
		{Text: "Went on after the restart."},
	}, envOptions{quiet: true})
	settings := e.project.ProjectSettings
	settings.AllowedTools = []string{"Bash"}
	if err := e.st.UpdateProjectSettings(t.Context(), e.project.ID, settings, ""); err != nil {
		t.Fatal(err)
	}
	db, dbURL := dbProxy(t, e.dbURL)
	tap := newModelTap(t, e.fake.URL())
	a := e.startReplica("A", "DATABASE_URL="+dbURL, "ANTHROPIC_BASE_URL="+tap.srv.URL)
	b := e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("run the slow thing")
	waitUntil(t, 90*time.Second, "the Bash call in the log", func() bool {
		var n int
		e.queryRow(`SELECT count(*) FROM events WHERE session_id = $1 AND payload::text LIKE '%sleep 5%'`, []any{s.ID}, &n)
		return n > 0
	})
	aPid := e.pidOf(s.ID)
	db.partition()
	wb := e.dialReplica(b, e.user, s.ID)
	wb.waitFor(90*time.Second, "The Parley replica running this session stopped while Claude was working.")
	wb.waitFor(90*time.Second, "Went on after the restart.")
	// A's claude runs its tool to the end meanwhile (5 s) and asks the
	// model to go on with its result: that request waits in A's gateway,
	// and the operator sees it on A's /metrics (loopback: no token needed).
	waitUntil(t, 60*time.Second, "A's claude's request held in A's gateway", func() bool {
		n, _ := strconv.Atoi(a.metric(t, "parley_model_requests_waiting"))
		return n >= 1
	})
	if got := a.metric(t, "parley_lease_held"); got != "0" {
		t.Errorf("A's parley_lease_held = %q while it is cut off, want 0", got)
	}
	if syscall.Kill(aPid, 0) != nil {
		t.Fatal("A's claude ended while A was cut off; the test shows nothing")
	}
	// Every later request of A's claude holds the marker (in the command,
	// and then in its output), so none may have passed A's tap.
	if n := tap.passed(slept); n != 0 {
		t.Fatalf("%d model requests of A's claude after its Bash call reached the model while B ran the session", n)
	}
	db.heal()
	a.waitLog(30*time.Second, "lease had lapsed")
	waitUntil(t, 30*time.Second, "A's claude process to end", func() bool {
		return syscall.Kill(aPid, 0) == syscall.ESRCH
	})
	time.Sleep(500 * time.Millisecond)
	if n := tap.passed(slept); n != 0 {
		t.Errorf("%d model requests of A's fenced claude reached the model", n)
	}
	waitUntil(t, 30*time.Second, "A's lease held again, nothing waiting", func() bool {
		return a.metric(t, "parley_lease_held") == "1" && a.metric(t, "parley_model_requests_waiting") == "0"
	})
	var open int
	e.queryRow(`SELECT count(*) FROM runs WHERE session_id = $1 AND ended_at IS NULL`, []any{s.ID}, &open)
	if open != 1 || e.owner(s.ID) != b.id {
		t.Errorf("%d open runs, owner %q; want B's one run (%s)", open, e.owner(s.ID), b.id)
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2: A's first, and B's that goes on", n)
	}
	e.wantContiguousLog(s.ID)
}

// metric is the value of the replica's metric name on its /metrics.
func (r *replica) metric(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %v", r.url, resp.StatusCode, err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			return v
		}
	}
	t.Fatalf("%s not on %s/metrics", name, r.url)
	return ""
}
