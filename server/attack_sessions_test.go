package server

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// Attack: a member opens 500 sessions in a loop over HTTP. The per-user
// rate refuses most with 429 and a sentence; the sessions it lets through
// wait for a slot, so live claude processes (counted in /proc, and from
// the runs recorded in Postgres) never exceed PARLEY_MAX_RUNS; and the
// server stays healthy: /healthz answers and a session opened before the
// attack still gets its answers.
func TestAttackFiveHundredSessions(t *testing.T) {
	const maxRuns = 2
	e := newEnv(t, fakeapi.Scenario{{Text: "ok from the model"}}, envOptions{quiet: true, perTurn: true,
		maxRuns: maxRuns, limits: DefaultLimits})
	existing := e.newSession()
	w := e.dial(existing.ID, 0)
	w.prompt("before the attack")
	w.waitFor(60*time.Second, "ok from the model")

	var peak, rssKB atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { watchClaudes(stop, &peak, &rssKB) })

	path := "/projects/" + pid(e) + "/sessions"
	start := time.Now()
	var created []string
	refused, other := 0, 0
	for i := range 500 {
		resp := e.postAs(e.user, path, url.Values{"text": {"attack " + strconv.Itoa(i)}})
		body := readAll(resp)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusSeeOther:
			created = append(created, strings.TrimPrefix(resp.Header.Get("Location"), "/sessions/"))
		case http.StatusTooManyRequests:
			refused++
			if !strings.Contains(body, "You are starting sessions too quickly (the limit is 10 a minute)") {
				t.Fatalf("a refusal without the sentence: %.300q", body)
			}
		default:
			other++
		}
	}
	elapsed := time.Since(start)
	// The bucket holds 10 and refills one every 6 s.
	if allowed := 10 + int(elapsed/(6*time.Second)) + 1; len(created) > allowed || len(created) < 10 {
		t.Errorf("%d sessions created in %v; want 10 to %d", len(created), elapsed, allowed)
	}
	if refused+len(created) != 500 || other != 0 {
		t.Errorf("created %d, refused %d, other answers %d", len(created), refused, other)
	}
	t.Logf("500 attempts in %v: %d created, %d refused with 429", elapsed.Round(time.Millisecond), len(created), refused)

	if resp := e.do(nil, http.MethodGet, "/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz during the attack: %d", resp.StatusCode)
	}
	// Every session let through is answered in turn.
	for _, id := range created {
		ws := e.dial(id, 0)
		ws.waitFor(180*time.Second, "ok from the model")
		ws.conn.Close()
	}
	// The session from before still works (its process was reaped for the line).
	w.prompt("after the attack")
	w.waitFor(120*time.Second, "after the attack", "ok from the model")
	close(stop)
	wg.Wait()
	if p := peak.Load(); p > maxRuns || p == 0 {
		t.Errorf("at most %d claude processes were seen at once; want 1 to %d", p, maxRuns)
	}
	if n := maxOverlappingRuns(t, e); n > maxRuns {
		t.Errorf("the runs table shows %d claude processes at once; the cap is %d", n, maxRuns)
	}
	if resp := e.do(nil, http.MethodGet, "/healthz", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("healthz after the attack: %d", resp.StatusCode)
	}
	t.Logf("peak live claude processes: %d (cap %d); largest claude resident set seen: %d MB", peak.Load(), maxRuns, rssKB.Load()>>10)
}

// watchClaudes counts this process's claude children in /proc until stop
// is closed, keeping the peak. A sampler, in a test only: it can miss a
// short overlap, which the runs table check does not.
func watchClaudes(stop <-chan struct{}, peak, rssKB *atomic.Int64) {
	me := strconv.Itoa(os.Getpid())
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		n := int64(0)
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			stat, err := os.ReadFile(filepath.Join(d, "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid …: comm may hold spaces, so split after ")".
			rest := stat[bytes.LastIndexByte(stat, ')')+1:]
			f := strings.Fields(string(rest))
			if len(f) < 2 || f[1] != me {
				continue
			}
			if cmd, _ := os.ReadFile(filepath.Join(d, "cmdline")); bytes.Contains(cmd, []byte("stream-json")) {
				n++
				rssKB.Store(max(rssKB.Load(), vmRSS(d)))
			}
		}
		if n > peak.Load() {
			peak.Store(n)
		}
	}
}

// vmRSS is a process's resident set in kB, from /proc/<pid>/status.
func vmRSS(procDir string) int64 {
	b, _ := os.ReadFile(filepath.Join(procDir, "status"))
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
