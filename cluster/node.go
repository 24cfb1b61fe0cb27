// Package cluster lets several `parley serve` replicas share one Postgres.
// Its one face is Node: each replica keeps a row alive in the replicas
// table; a session's runs live on the replica holding its lease; prompts,
// answers and stops sent to any replica reach the owner through a request
// row and NOTIFY; every insert into the event log is announced by NOTIFY
// (ids and seqs only) and replicas re-publish those events to their own
// browsers from the log. When a replica's row lapses, any other takes its
// sessions over: their open asks stay open and an answer resumes the
// session (--resume) wherever it arrives.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"parley/runner"
	"parley/store"
)

// Config is a replica's cluster configuration.
type Config struct {
	// TTL is how long a replica's row, and with it its leases, outlives its
	// last heartbeat; it is renewed every TTL/3. 0 = 15 s.
	TTL time.Duration
	// DataDir must be one directory every replica shares (workspaces and
	// the CLI's transcripts live there); Join checks it.
	DataDir string
	// RuntimeBase holds each replica's runtime directory (named by its id);
	// the run files of a replica whose lease lapses are swept from it.
	// "" = no sweep.
	RuntimeBase string
}

// Deps are a Node's collaborators.
type Deps struct {
	Store      *store.Store
	Supervisor *runner.Supervisor
	// Publisher shows events that another replica wrote (or a takeover
	// wrote) to this replica's browsers.
	Publisher runner.Publisher
	// Starter gives the options to start a session's process with, for
	// requests forwarded by other replicas.
	Starter func(sessionID string) runner.Starter
	Log     *slog.Logger
	// Local shows other replicas' viewers and signals to this replica's
	// browsers; nil = nobody to show them to, and every session counts as
	// watched (signal.go).
	Local Local
	// TakenOver is told how many sessions a takeover moved; nil = nobody.
	TakenOver func(sessions int)
}

// Node is this replica's place among the replicas sharing the database.
type Node struct {
	cfg Config
	Deps
	id string

	mu       sync.Mutex
	waiters  map[int64]waiter // forwarded requests awaiting their reply
	projects map[string]int64 // session → project, for re-published events
	// feeds are the announced batches of events waiting to be shown, by
	// session; a session is here while its feed goroutine runs (fanout.go).
	feeds map[string][]batch
	wg    sync.WaitGroup // requests being carried out for other replicas
	// outbox holds the viewer lists to signal, by session (signal.go).
	outbox     map[string]viewers
	outboxKick chan struct{}
	queueLocks sessionLocks // queue.go

	// leaseAt is when this replica's lease was last surely renewed: the
	// start of its last heartbeat that renewed it with no fence pending
	// (LeaseHeld).
	leaseAt atomic.Pointer[time.Time]
	// fencePending: a heartbeat found the lease had lapsed, and the runs
	// taken over meanwhile are not fenced yet.
	fencePending atomic.Bool
	// recovering: a takeover's recovery runs (recoverTakeover); again:
	// another takeover came meanwhile. taken counts the sessions taken
	// over that no recovery has reported yet (TakenOver).
	recovering, recoverAgain atomic.Bool
	taken                    atomic.Int64
	takeOvers                int64 // the store's TakeOvers count last seen
}

type waiter struct {
	owner string
	done  chan error
}

// errOwnerGone ends a forwarded request whose owner lapsed before answering.
var errOwnerGone = errors.New("the replica running this session stopped")

// New returns the Node of the replica whose store is d.Store.
func New(cfg Config, d Deps) *Node {
	if cfg.TTL <= 0 {
		cfg.TTL = 15 * time.Second
	}
	if d.TakenOver == nil {
		d.TakenOver = func(int) {}
	}
	return &Node{cfg: cfg, Deps: d, id: d.Store.Replica(), waiters: map[int64]waiter{},
		projects: map[string]int64{}, feeds: map[string][]batch{}, outbox: map[string]viewers{}, outboxKick: make(chan struct{}, 1)}
}

// ID is this replica's id.
func (n *Node) ID() string { return n.id }

// Join registers the replica, checks that its data directory is the one
// the other live replicas use, and takes over the sessions of replicas
// that lapsed (after a crash, that is this machine's previous process).
// It never touches a live replica's runs.
func (n *Node) Join(ctx context.Context) error {
	start := time.Now()
	if _, err := n.Store.Heartbeat(ctx, n.cfg.DataDir, n.cfg.TTL); err != nil {
		return err
	}
	n.leaseAt.Store(&start)
	if err := n.checkShared(ctx); err != nil {
		return errors.Join(err, n.Store.LeaveCluster(context.WithoutCancel(ctx)))
	}
	dead, sessions, err := n.Store.TakeOver(ctx)
	if err != nil {
		return err
	}
	if sessions > 0 || len(dead) > 0 {
		n.Log.Info("took over the sessions of stopped replicas; their open asks stay open and an answer resumes the session",
			"replicas", len(dead), "sessions", sessions)
		n.TakenOver(sessions)
	}
	n.sweepLapsed(dead)
	n.takeOvers = n.Store.TakeOvers() // recovered by the caller (TakenOver, then at start)
	return nil
}

// markerDir holds one empty file per replica that uses the data directory.
func (n *Node) markerDir() string { return filepath.Join(n.cfg.DataDir, "replicas") }

// checkShared refuses a data directory another live replica cannot see:
// a session taken over must find its workspace and transcript.
func (n *Node) checkShared(ctx context.Context) error {
	if err := os.MkdirAll(n.markerDir(), 0o755); err != nil {
		return fmt.Errorf("replica marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(n.markerDir(), n.id), nil, 0o644); err != nil {
		return fmt.Errorf("replica marker: %w", err)
	}
	ids, err := n.Store.LiveReplicas(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(n.markerDir(), id)); id != n.id && err != nil {
			return fmt.Errorf("replica %s uses this database but not this data directory (%s): "+
				"every replica needs the same data directory on a shared filesystem", id, n.cfg.DataDir)
		}
	}
	return nil
}

// Run keeps the replica's row alive, takes over lapsed replicas and
// serves notifications until ctx ends. A lost LISTEN connection (the
// database restarting or away) is opened again with a capped backoff: a
// database outage does not end the replica.
func (n *Node) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	listen := func() {
		go func() {
			errc <- n.Store.Listen(ctx, []string{store.EventsChannel, store.RequestsChannel, store.RepliesChannel,
				store.HandoverChannel, store.SignalsChannel},
				func() {}, n.notified)
		}()
	}
	listen()
	listening := true
	var relisten <-chan time.Time
	wait := relistenFirst
	vctx, stopViewers := context.WithCancel(ctx)
	defer stopViewers()
	n.wg.Go(func() { n.sendViewers(vctx) })
	// The heartbeat is a lease renewal on a deadline, not a poll for work:
	// work arrives by NOTIFY.
	beat := time.NewTicker(n.cfg.TTL / 3)
	defer beat.Stop()
	n.deliverOwed(ctx)  // after a crash: answers saved that Claude never got
	n.deliverQueue(ctx) // and prompts and answers left waiting in the queue
	for {
		select {
		case <-beat.C:
			n.heartbeat(ctx)
		case err := <-errc:
			listening = false
			if ctx.Err() != nil {
				n.wg.Wait()
				return nil
			}
			n.Log.Warn("cluster notifications lost; listening again", "err", err, "in", wait)
			relisten = time.After(wait)
			wait = min(wait*2, relistenMax)
		case <-relisten:
			relisten, listening = nil, true
			listen()
		case <-ctx.Done():
			var err error
			if listening {
				err = <-errc
			}
			n.wg.Wait()
			return err
		}
	}
}

// The backoff of listening again after the LISTEN connection was lost.
const (
	relistenFirst = 100 * time.Millisecond
	relistenMax   = 5 * time.Second
)

// LeaseHeld reports whether this replica surely still holds its lease:
// its last renewal is less than the lease's TTL ago, and no run another
// replica took over meanwhile is left unfenced. Runs write to the log only
// while it holds (runner.Supervisor.SetLeaseCheck).
func (n *Node) LeaseHeld() bool {
	at := n.leaseAt.Load()
	if at == nil || n.fencePending.Load() {
		return false
	}
	// Go's monotonic clock stops while the machine is suspended; the wall
	// clock does not, and a suspend is a pause too. (A wall clock set
	// forward only holds writes until the next renewal.)
	now := time.Now()
	return now.Sub(*at) < n.cfg.TTL && now.Round(0).Sub(at.Round(0)) < n.cfg.TTL
}

func (n *Node) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.TTL/3)
	defer cancel()
	start := time.Now()
	alive, err := n.Store.Heartbeat(ctx, n.cfg.DataDir, n.cfg.TTL)
	if err != nil {
		n.Log.Error("renew the replica's lease", "err", err)
		return
	}
	if !alive {
		n.Log.Error("this replica's lease had lapsed and was renewed; other replicas may have taken its sessions over")
		n.fencePending.Store(true)
	}
	if n.fencePending.Load() && !n.fence(ctx) {
		return // writes wait; the next heartbeat tries again
	}
	n.fencePending.Store(false)
	n.leaseAt.Store(&start)
	dead, sessions, err := n.Store.TakeOver(ctx)
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			n.Log.Error("take over stopped replicas", "err", err)
		}
		return
	}
	// A takeover made elsewhere on this replica (a session's lease taken
	// on its next message) is recovered here too.
	if t := n.Store.TakeOvers(); t != n.takeOvers {
		n.takeOvers = t
		n.recoverTakeover(context.WithoutCancel(ctx), sessions)
	} else {
		defer n.deliverQueue(ctx) // what waited in the queue where nobody serves it now
	}
	if len(dead) > 0 {
		n.Log.Info("replicas stopped; their sessions are free for any replica", "replicas", dead, "sessions", sessions)
		n.ownersGone(dead)
		n.deliverOwed(ctx)
		n.sweepLapsed(dead)
		for _, id := range dead {
			n.local().RemoteViewers(id, "", nil, false)
		}
	}
}

// recoverTakeover reconciles the sessions of the runs a takeover ended
// (TakenOver), then sends on what it kept in the queue (a cut turn's go-on), off
// the heartbeat: reading logs and transcripts must not hold the lease's
// renewal up. One runs at a time; a takeover meanwhile has it run again.
func (n *Node) recoverTakeover(ctx context.Context, sessions int) {
	n.taken.Add(int64(sessions))
	if !n.recovering.CompareAndSwap(false, true) {
		n.recoverAgain.Store(true)
		return
	}
	n.wg.Go(func() {
		defer n.recovering.Store(false)
		for {
			n.TakenOver(int(n.taken.Swap(0)))
			n.deliverQueue(ctx)
			if !n.recoverAgain.Swap(false) {
				return
			}
		}
	})
}

// fence stops the runs of this replica that another replica took over
// while its lease had lapsed (a long pause: the process stopped, the
// machine suspended): their sessions may already run elsewhere, resumed
// or going on with a cut turn, and one conversation must not run in two
// processes. Each is marked fenced before fence returns, so it writes
// nothing more; false if the runs could not be checked.
func (n *Node) fence(ctx context.Context) bool {
	bySession := map[int64]string{}
	var ids []int64
	var unrecorded []string // runs whose start the log could not record (id 0)
	for _, id := range n.Supervisor.Sessions() {
		r, ok := n.Supervisor.Live(id)
		switch {
		case !ok:
		case r.ID() == 0:
			unrecorded = append(unrecorded, id)
		default:
			bySession[r.ID()] = id
			ids = append(ids, r.ID())
		}
	}
	// A start in flight (its process spawned or primed, its run not live
	// yet) is fenced as an unrecorded run is: runner.Supervisor.Starting.
	unrecorded = append(unrecorded, n.Supervisor.Starting()...)
	var ended []int64
	if len(ids) > 0 {
		var err error
		if ended, err = n.Store.TakenOverRuns(ctx, ids); err != nil {
			n.Log.Error("find the runs taken over while this replica's lease had lapsed", "err", err)
			return false
		}
	}
	for _, runID := range ended {
		n.Log.Warn("stopping a run another replica took over while this replica's lease had lapsed",
			"session_id", bySession[runID], "run_id", runID)
		n.Supervisor.Fence(bySession[runID], runID)
	}
	// A takeover cannot end a run it has no row of; it frees the session's
	// lease, so a run of a session no longer this replica's is stopped.
	for _, id := range unrecorded {
		owner, err := n.Store.Owner(ctx, id)
		if err != nil {
			n.Log.Error("find whether a session is still this replica's", "session_id", id, "err", err)
			return false
		}
		if owner != n.id {
			n.Log.Warn("stopping a run whose start was not recorded: its session's lease lapsed and is no longer this replica's",
				"session_id", id, "owner", owner)
			n.Supervisor.Fence(id, 0)
		}
	}
	return true
}

// Leave hands this replica's sessions over: its runs end (their open asks
// stay open, to be answered anywhere), then its row and leases go, so any
// replica takes each session on its next message.
func (n *Node) Leave(ctx context.Context) error {
	n.Supervisor.Shutdown()
	n.signal(ctx, signal{Kind: sigGone})
	_ = os.Remove(filepath.Join(n.markerDir(), n.id))
	return n.Store.LeaveCluster(ctx)
}
