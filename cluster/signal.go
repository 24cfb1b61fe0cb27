package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"parley/store"
)

// Local is this replica's side of the signals: its browsers (the hub).
type Local interface {
	// RemoteViewers records the viewers of a session on another replica;
	// sessionID "" forgets every session of that replica.
	RemoteViewers(replica, sessionID string, names []string, ask bool)
	// CloseSession closes the session's sockets here.
	CloseSession(sessionID string)
	// Recheck has every socket here check its viewer's access now.
	Recheck()
	// Watching says whether a browser or client here watches the session,
	// and whether one watches its project's asks (an inbox).
	Watching(sessionID string, projectID int64) (session, asks bool)
}

// Signal kinds, on store.SignalsChannel.
const (
	sigViewers     = "viewers"      // a session's viewers on the sender
	sigStopSession = "stop_session" // end the session's run, close its sockets
	sigStopRun     = "stop_run"     // end the session's run only
	sigStopProject = "stop_project" // end the project's runs, recheck sockets
	sigAccess      = "access"       // recheck every socket's access
	sigGone        = "gone"         // the sender stops: forget its viewers
)

// signal is one notification every other replica acts on.
type signal struct {
	From    string   `json:"from"`
	Kind    string   `json:"kind"`
	Session string   `json:"session,omitempty"`
	Project int64    `json:"project,omitempty"`
	Names   []string `json:"names,omitempty"` // each viewer once …
	Tabs    []int    `json:"tabs,omitempty"`  // … with the number of tabs
	Ask     bool     `json:"ask,omitempty"`   // answer with your viewers of Session
}

// maxSignalNames bounds the names one presence signal carries (NOTIFY
// payloads are small).
const maxSignalNames = 100

// viewers is a session's viewers here, waiting to be signalled.
type viewers struct {
	names []string
	first bool
}

// Viewers queues the session's viewers on this replica for the others
// (the hub calls it, gathered, after they change); first says this
// replica had none before, so the others answer with theirs. It never
// blocks: only the latest list of each session is sent.
func (n *Node) Viewers(sessionID string, names []string, first bool) {
	n.mu.Lock()
	v := n.outbox[sessionID]
	n.outbox[sessionID] = viewers{names: names, first: first || v.first}
	n.mu.Unlock()
	select {
	case n.outboxKick <- struct{}{}:
	default:
	}
}

// sendViewers signals every queued viewer list, until ctx ends.
func (n *Node) sendViewers(ctx context.Context) {
	for {
		select {
		case <-n.outboxKick:
		case <-ctx.Done():
			return
		}
		n.mu.Lock()
		out := n.outbox
		n.outbox = map[string]viewers{}
		n.mu.Unlock()
		for id, v := range out {
			s := signal{Kind: sigViewers, Session: id, Ask: v.first}
			slices.Sort(v.names)
			for _, name := range v.names {
				if k := len(s.Names); k > 0 && s.Names[k-1] == name {
					s.Tabs[k-1]++
				} else if k < maxSignalNames {
					s.Names, s.Tabs = append(s.Names, name), append(s.Tabs, 1)
				}
			}
			n.signal(ctx, s)
		}
	}
}

// StopSession ends the session's run wherever it lives and closes its
// sockets on every replica (an archived session keeps no process).
func (n *Node) StopSession(ctx context.Context, sessionID string) {
	n.signal(ctx, signal{Kind: sigStopSession, Session: sessionID})
	n.Supervisor.Stop(sessionID)
	n.local().CloseSession(sessionID)
}

// StopRun ends the session's run on whichever replica runs it; its pages
// stay open (a worktree merge: the next message resumes the session).
func (n *Node) StopRun(ctx context.Context, sessionID string) {
	n.signal(ctx, signal{Kind: sigStopRun, Session: sessionID})
	n.Supervisor.Stop(sessionID)
}

// StopProject ends the project's runs on every replica and has every
// socket check its access again.
func (n *Node) StopProject(ctx context.Context, projectID int64) {
	n.signal(ctx, signal{Kind: sigStopProject, Project: projectID})
	n.Supervisor.StopProject(projectID)
	n.local().Recheck()
}

// AccessChanged has every socket on every replica check its viewer's
// access now (a member removed or demoted), and every run whether its
// turns' authors may still send them.
func (n *Node) AccessChanged(ctx context.Context) {
	n.signal(ctx, signal{Kind: sigAccess})
	n.local().Recheck()
	n.Supervisor.CheckAuthors()
}

// SignalAccessChanged tells every replica that access changed outside
// them (`parley user remove`): their sockets and runs check it at once.
func SignalAccessChanged(ctx context.Context, st *store.Store) error {
	b, err := json.Marshal(signal{From: "parley user", Kind: sigAccess})
	if err != nil {
		return err
	}
	return st.Signal(ctx, string(b))
}

func (n *Node) signal(ctx context.Context, s signal) {
	s.From = n.id
	b, err := json.Marshal(s)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = n.Store.Signal(ctx, string(b))
		cancel()
	}
	if err != nil {
		n.Log.Warn("signal the other replicas", "kind", s.Kind, "err", err)
	}
}

// signalled acts on another replica's signal, on the listening goroutine;
// stopping runs takes a while, so it happens on a goroutine of its own.
func (n *Node) signalled(payload string) {
	var s signal
	if json.Unmarshal([]byte(payload), &s) != nil || s.From == n.id {
		return
	}
	switch s.Kind {
	case sigViewers:
		var names []string
		for i, name := range s.Names {
			for range s.Tabs[min(i, len(s.Tabs)-1)] {
				names = append(names, name)
			}
		}
		n.local().RemoteViewers(s.From, s.Session, names, s.Ask)
	case sigGone:
		n.local().RemoteViewers(s.From, "", nil, false)
	case sigAccess:
		n.local().Recheck()
		n.Supervisor.CheckAuthors()
	case sigStopSession:
		n.wg.Go(func() { n.Supervisor.Stop(s.Session); n.local().CloseSession(s.Session) })
	case sigStopRun:
		n.wg.Go(func() { n.Supervisor.Stop(s.Session) })
	case sigStopProject:
		n.wg.Go(func() { n.Supervisor.StopProject(s.Project); n.local().Recheck() })
	}
}

// local is Deps.Local, or nothing.
func (n *Node) local() Local {
	if n.Local == nil {
		return noLocal{}
	}
	return n.Local
}

type noLocal struct{}

func (noLocal) RemoteViewers(string, string, []string, bool) {}
func (noLocal) CloseSession(string)                          {}
func (noLocal) Recheck()                                     {}
func (noLocal) Watching(string, int64) (bool, bool)          { return true, true } // as if all were watched
