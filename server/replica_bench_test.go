//go:build bench

package server

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// BenchmarkAnswerThroughReplica runs two `parley serve` replicas: asks of a
// run on A are answered through B. It reports answer sent to B → the
// resolved card on B's socket, and → the tool result reaching the model.
func BenchmarkAnswerThroughReplica(b *testing.B) {
	asks := benchInt("PARLEY_BENCH_REPLICA_ASKS", 20)
	sc := fakeapi.Scenario{}
	for i := range asks {
		sc = append(sc, bashStep(fmt.Sprintf("touch f%d", i)))
	}
	sc = append(sc, fakeapi.Step{Text: "done"})
	e := newEnv(b, sc, envOptions{quiet: true})
	a, r := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa, wb := e.dialReplica(a, e.user, s.ID), e.dialReplica(r, e.user, s.ID)
	wa.prompt("go")
	var toCard, toModel []time.Duration
	for i := range asks {
		wb.waitFor(2*time.Minute, fmt.Sprintf("touch f%d</code>", i))
		ins, err := e.st.PendingInputs(b.Context(), s.ID)
		if err != nil || len(ins) != 1 {
			b.Fatalf("pending inputs = %v, %v", ins, err)
		}
		start := time.Now()
		wb.answer(ins[0], map[string]any{"decision": "allow", "command": fmt.Sprintf("touch f%d", i)})
		wb.waitFor(time.Minute, "ask-answered")
		toCard = append(toCard, time.Since(start))
		if err := e.fake.WaitRequests(b.Context(), i+2); err != nil {
			b.Fatal(err)
		}
		toModel = append(toModel, time.Since(start))
	}
	pctl("answer through the other replica → resolved card on its page", toCard)
	pctl("answer through the other replica → next model request (includes the CLI running the command)", toModel)
}

// rssKiB is a process's resident set size.
func rssKiB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// groupRSSKiB sums the RSS of every process in the process group pgid.
func groupRSSKiB(pgid int) int {
	entries, _ := os.ReadDir("/proc")
	total := 0
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			total += rssKiB(pid)
		}
	}
	return total
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkSessionMemory reports the memory of a live session (the
// server's heap for it, and its claude process group's RSS) and of an idle
// one (its process ended; it lives in Postgres only).
func BenchmarkSessionMemory(b *testing.B) {
	n := benchInt("PARLEY_BENCH_MEM_SESSIONS", 10)
	e := newEnv(b, fakeapi.Scenario{{Text: "hello"}}, envOptions{quiet: true, perTurn: true})
	base := heapInUse()
	var pids []int
	for range n {
		s := e.newSession()
		w := e.dial(s.ID, 0)
		w.prompt("hi")
		w.waitFor(2*time.Minute, "Done ·")
		r, ok := e.sup.Live(s.ID)
		if !ok {
			b.Fatal("no live run after the turn")
		}
		_ = r
		var pid int
		e.queryRow(`SELECT pid FROM runs WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, []any{s.ID}, &pid)
		pids = append(pids, pid)
	}
	live := heapInUse()
	rss := 0
	for _, pid := range pids {
		rss += groupRSSKiB(pid)
	}
	e.sup.Shutdown()
	idle := heapInUse()
	figure("live session: server heap", float64(int64(live)-int64(base))/float64(n)/1024, "KiB")
	figure("live session: claude process group RSS", float64(rss)/float64(n)/1024, "MiB")
	figure("idle session: server heap", float64(int64(idle)-int64(base))/float64(n)/1024, "KiB")
}
