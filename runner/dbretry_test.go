package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley/askuser"
)

// outageJournal is a memJournal whose database goes away at the first
// event of type trip and stays away until back is called.
type outageJournal struct {
	*memJournal
	trip    string
	tripped atomic.Bool
	down    atomic.Bool
	fails   chan struct{} // one value per failed call, while someone listens
}

func (j *outageJournal) fail() error {
	select {
	case j.fails <- struct{}{}:
	default:
	}
	return fmt.Errorf("%w: dial unix: connect: no such file or directory", ErrUnavailable)
}

func (j *outageJournal) Append(ctx context.Context, e Event) error {
	if e.Type == j.trip && !j.tripped.Swap(true) {
		j.down.Store(true)
	}
	if j.down.Load() {
		return j.fail()
	}
	return j.memJournal.Append(ctx, e)
}

func (j *outageJournal) LastSeq(ctx context.Context, id string) (int64, error) {
	if j.down.Load() {
		return 0, j.fail()
	}
	return j.memJournal.LastSeq(ctx, id)
}

// waitingPublisher is a chanPublisher that also records the run's
// database waits (DatabaseObserver).
type waitingPublisher struct {
	chanPublisher
	waits chan bool
}

func (p waitingPublisher) DatabaseWaiting(_ string, waiting bool) { p.waits <- waiting }

// A CLI that prints many lines quickly, then leaves a mark: while the
// database is away it must block on its stdout before the mark.
const floodCLI = `#!/bin/sh
read line
i=0
while [ $i -lt 20000 ]; do
  echo "{\"type\":\"flood\",\"n\":$i,\"pad\":\"................................................................................\"}"
  i=$((i+1))
done
touch "$MARK"
echo '{"type":"result","is_error":false,"total_cost_usd":0,"num_turns":1}'
read line
`

// floodRun starts session s1's run of floodCLI (which touches mark once it
// has printed everything) against a journal whose database goes away at
// the "flood" line.
func floodRun(t *testing.T, mark string) (*outageJournal, waitingPublisher, *Supervisor) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte(floodCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	j := &outageJournal{memJournal: &memJournal{}, trip: "flood", fails: make(chan struct{})}
	pub := waitingPublisher{chanPublisher: make(chanPublisher, 1<<16), waits: make(chan bool, 16)}
	sup := NewSupervisor(context.Background(), Deps{
		Config:  Config{ClaudeBin: bin, SelfExe: "/bin/false", Env: append(os.Environ(), "MARK="+mark)},
		Journal: j, Publisher: pub, Broker: askuser.NewBroker(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), RuntimeDir: t.TempDir(),
	})
	t.Cleanup(sup.Shutdown)
	if err := sup.Prompt(t.Context(), "s1", With(testOptions(t, "")), "go", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	return j, pub, sup
}

// TestRunWaitsOutADatabaseOutage takes the database away at the first line
// of a flood of output: the loop stops reading, so the CLI blocks before it
// has printed everything (backpressure); the page is told the session
// waits; once the database is back every line is in the log, in order,
// numbered without a gap, and the notice is cleared.
func TestRunWaitsOutADatabaseOutage(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "printed-everything")
	j, pub, _ := floodRun(t, mark)
	select {
	case w := <-pub.waits:
		if !w {
			t.Fatal("the first database notice says the wait is over")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run never said it waits for the database")
	}
	// Six failed attempts take 50+100+…+1600 ms of backoff: ample time for
	// the CLI to print 2 MB if nothing held it back.
	for range 6 {
		select {
		case <-j.fails:
		case <-time.After(60 * time.Second):
			t.Fatal("the run stopped retrying")
		}
	}
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the CLI printed all its output while the database was away (mark: %v): no backpressure", err)
	}
	j.down.Store(false)
	waitType(t, pub.chanPublisher, "result")
	if w := <-pub.waits; w {
		t.Error("the database notice was not cleared")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var floods []string
	for i, e := range j.events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type == "flood" {
			floods = append(floods, string(e.Payload))
		}
	}
	if len(floods) != 20000 {
		t.Fatalf("the log holds %d of the 20000 lines", len(floods))
	}
	for i, p := range floods {
		if !strings.Contains(p, fmt.Sprintf(`"n":%d,`, i)) {
			t.Fatalf("line %d of the log is %.80s: out of order", i, p)
		}
	}
}

// TestRunStopsWhileTheDatabaseIsAway stops a run whose loop is waiting for
// the database: the stop ends the run (within stopGrace of trying to write
// what it holds) instead of waiting for the database forever.
func TestRunStopsWhileTheDatabaseIsAway(t *testing.T) {
	_, pub, sup := floodRun(t, filepath.Join(t.TempDir(), "mark"))
	select {
	case <-pub.waits:
	case <-time.After(60 * time.Second):
		t.Fatal("the run never said it waits for the database")
	}
	r, ok := sup.Live("s1")
	if !ok {
		t.Fatal("no live run")
	}
	pid := r.proc.cmd.Process.Pid
	stopped := make(chan struct{})
	go func() { sup.Stop("s1"); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(stopGrace + 60*time.Second):
		t.Fatal("Stop did not return while the database was away")
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d still exists after Stop: %v", pid, err)
	}
	if _, ok := sup.Live("s1"); ok {
		t.Error("the run is still live after Stop")
	}
}
