//go:build bench

package server

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/store"
)

// The viewer farm holds BenchmarkFanout's browsers in a process of their
// own, as browsers are: the server's goroutines and the viewers' reads do
// not share one Go scheduler, and each side's CPU is counted apart. The
// farm is this test binary started with farmArg (TestMain; benchhooks_test.go).

// farmMain dials PARLEY_FARM_N viewers of a session, says "ready" once each
// has read seq PARLEY_FARM_READY, then, told "wait SEQ" on stdin, waits
// until each has read SEQ and prints its CPU time ("cpu µs") and when each
// viewer read each seq and when its bytes reached the viewer's socket
// ("seen SEQ READ ARRIVED", Unix nanoseconds), then "done". With
// PARLEY_FARM_PROFILE set it writes its CPU profile from "ready" on there.
func farmMain() int {
	fail := func(err error) int {
		fmt.Println("error", err)
		return 1
	}
	base, sessionID := os.Getenv("PARLEY_FARM_URL"), os.Getenv("PARLEY_FARM_SESSION")
	n, _ := strconv.Atoi(os.Getenv("PARLEY_FARM_N"))
	ready, _ := strconv.ParseInt(os.Getenv("PARLEY_FARM_READY"), 10, 64)
	h := http.Header{"Origin": {base}, "Cookie": {os.Getenv("PARLEY_FARM_COOKIE")}}
	vs, errs := make([]*seqViewer, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range vs {
		wg.Go(func() { vs[i], errs[i] = dialLeanViewer(base, sessionID, h, 0) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fail(err)
		}
	}
	if err := farmWait(vs, ready); err != nil {
		return fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	cpu0 := cpuTime()
	if name := os.Getenv("PARLEY_FARM_PROFILE"); name != "" {
		if f, err := os.Create(name); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 0
	}
	last, err := strconv.ParseInt(strings.TrimPrefix(in.Text(), "wait "), 10, 64)
	if err != nil {
		return fail(err)
	}
	if err := farmWait(vs, last); err != nil {
		return fail(err)
	}
	fmt.Fprintf(out, "cpu %d\n", (cpuTime() - cpu0).Microseconds())
	out.Flush()
	for _, v := range vs {
		v.mu.Lock()
		for seq := 1; seq < len(v.at); seq++ {
			fmt.Fprintf(out, "seen %d %d %d\n", seq, v.at[seq], v.arr[seq])
		}
		v.mu.Unlock()
	}
	fmt.Fprintln(out, "done")
	out.Flush()
	return 0
}

// farmWait waits until every viewer has read seq.
func farmWait(vs []*seqViewer, seq int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, v := range vs {
		for {
			v.mu.Lock()
			last := v.last
			v.mu.Unlock()
			if last >= seq {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("a viewer did not read seq %d (it has %d)", seq, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// viewerFarm is a running farm of n viewers of a session, each of which
// has read seq ready.
type viewerFarm struct {
	in  *bufio.Writer
	out *bufio.Scanner
}

func (e *env) viewerFarm(b *testing.B, sessionID string, n int, ready int64) *viewerFarm {
	cmd := exec.CommandContext(b.Context(), os.Args[0], farmArg)
	cmd.Env = append(os.Environ(), "PARLEY_FARM_URL="+e.web.URL, "PARLEY_FARM_SESSION="+sessionID,
		"PARLEY_FARM_N="+strconv.Itoa(n), "PARLEY_FARM_READY="+strconv.FormatInt(ready, 10),
		"PARLEY_FARM_COOKIE="+sessionCookie+"="+e.user.Cookie, "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	w, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close(); _ = cmd.Wait() })
	f := &viewerFarm{in: bufio.NewWriter(w), out: bufio.NewScanner(r)}
	f.out.Buffer(nil, 1<<20)
	if !f.out.Scan() || f.out.Text() != "ready" {
		b.Fatalf("viewer farm: %q %v", f.out.Text(), f.out.Err())
	}
	return f
}

// farmReport is what the farm reports once every viewer read a seq.
type farmReport struct {
	// farmCPU is the farm's CPU time since it was ready, ownCPU this
	// process's (cpuTime) when every viewer had read the seq.
	farmCPU, ownCPU time.Duration
	// For each event a viewer read: the time from the event being recorded
	// to the viewer reading it (read) and to its bytes reaching the
	// viewer's socket (arrived); from its being published, its batch
	// committed, to its reaching the socket (published); and for each
	// event the model sent, from then to the viewer reading it (fromModel).
	read, arrived, published, fromModel []time.Duration
}

// wait has the farm wait until every viewer has read seq, and returns its
// report on evs; sent and published say when the model sent an event and
// when the server published it.
func (f *viewerFarm) wait(b *testing.B, seq int64, evs []store.Event, sent, published map[int64]time.Time) farmReport {
	fmt.Fprintf(f.in, "wait %d\n", seq)
	if err := f.in.Flush(); err != nil {
		b.Fatal(err)
	}
	born := map[int64]time.Time{}
	for _, ev := range evs {
		born[ev.Seq] = ev.CreatedAt
	}
	var r farmReport
	for f.out.Scan() {
		var a, c, d int64
		switch line := f.out.Text(); {
		case line == "done":
			return r
		case strings.HasPrefix(line, "cpu "):
			r.ownCPU = cpuTime()
			_, _ = fmt.Sscanf(line, "cpu %d", &a)
			r.farmCPU = time.Duration(a) * time.Microsecond
		case strings.HasPrefix(line, "seen "):
			_, _ = fmt.Sscanf(line, "seen %d %d %d", &a, &c, &d)
			if at, ok := born[a]; ok {
				r.read = append(r.read, time.Unix(0, c).Sub(at))
				r.arrived = append(r.arrived, time.Unix(0, d).Sub(at))
			}
			if at, ok := published[a]; ok {
				r.published = append(r.published, time.Unix(0, d).Sub(at))
			}
			if at, ok := sent[a]; ok {
				r.fromModel = append(r.fromModel, time.Unix(0, c).Sub(at))
			}
		default:
			b.Fatalf("viewer farm: %s", line)
		}
	}
	b.Fatalf("viewer farm ended: %v", f.out.Err())
	return r
}
