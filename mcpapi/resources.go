package mcpapi

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// uriPrefix names a session's resource: parley://sessions/{id}.
const uriPrefix = "parley://sessions/"

// SessionURI is the resource URI of a session.
func SessionURI(id string) string { return uriPrefix + id }

// addResources offers each session as a resource whose content is its
// get_status, to read and to subscribe to.
func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "session",
		Title:       "A Parley session",
		URITemplate: uriPrefix + "{id}",
		Description: "A session's status, recent output and pending inputs (get_status). Subscribe to learn of every change at once: a new pending input, output, the end of a turn.",
		MIMEType:    "application/json",
	}, s.readSession)
}

func (s *Server) readSession(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	u, ok := userOf(req.Extra)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	id, ok := strings.CutPrefix(req.Params.URI, uriPrefix)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	st, err := s.sessions.Status(ctx, u, GetStatusInput{SessionID: id})
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
}

// subscribe checks that the user may see the session, then makes sure its
// changes are watched.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	u, ok := userOf(req.Extra)
	id, isSession := strings.CutPrefix(req.Params.URI, uriPrefix)
	if !ok || !isSession {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	if _, err := s.sessions.Status(ctx, u, GetStatusInput{SessionID: id, OutputLines: 1}); err != nil {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	return s.watch.add(req.Session, u, id)
}

// unsubscribe ends the MCP session's own subscription, if it has one:
// another client's unsubscribe cannot stop a subscriber's updates.
func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	if id, ok := strings.CutPrefix(req.Params.URI, uriPrefix); ok {
		s.watch.remove(req.Session, id)
	}
	return nil
}

// coalesce is the shortest gap between two updates of one resource: a
// streamed reply changes the log many times a second, and a subscriber
// re-reads the resource on each notice.
const coalesce = 100 * time.Millisecond

// watchers feeds notifications/resources/updated: one goroutine per
// watched session while any MCP session subscribes to it.
type watchers struct {
	ctx context.Context
	s   *Server
	mu  sync.Mutex
	m   map[string]*watcher
}

type watcher struct {
	subs   map[*mcp.ServerSession]bool // the MCP sessions subscribed
	cancel context.CancelFunc
}

func newWatchers(ctx context.Context, s *Server) *watchers {
	return &watchers{ctx: ctx, s: s, m: map[string]*watcher{}}
}

func (w *watchers) add(by *mcp.ServerSession, u User, id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x, ok := w.m[id]; ok {
		w.follow(by, x)
		x.subs[by] = true
		return nil
	}
	ctx, cancel := context.WithCancel(w.ctx)
	changes, err := w.s.sessions.Watch(ctx, u, id)
	if err != nil {
		cancel()
		return err
	}
	x := &watcher{subs: map[*mcp.ServerSession]bool{by: true}, cancel: cancel}
	w.follow(by, x)
	w.m[id] = x
	go func() {
		w.forward(ctx, id, changes)
		w.mu.Lock()
		if w.m[id] == x { // the watch ended by itself: the next subscribe starts anew
			delete(w.m, id)
		}
		w.mu.Unlock()
		cancel()
	}()
	return nil
}

// follow forgets by's subscription to x's session once the MCP client
// disconnects without unsubscribing (called under w.mu, before by joins).
func (w *watchers) follow(by *mcp.ServerSession, x *watcher) {
	if by == nil || x.subs[by] {
		return
	}
	go func() {
		done := make(chan struct{})
		go func() { _ = by.Wait(); close(done) }()
		select {
		case <-done:
		case <-w.ctx.Done():
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for id, y := range w.m {
			if y == x && y.subs[by] {
				if delete(y.subs, by); len(y.subs) == 0 {
					y.cancel()
					delete(w.m, id)
				}
			}
		}
	}()
}

func (w *watchers) remove(by *mcp.ServerSession, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x, ok := w.m[id]; ok && x.subs[by] {
		if delete(x.subs, by); len(x.subs) == 0 {
			x.cancel()
			delete(w.m, id)
		}
	}
}

// forward turns changes into resource updates, at most one per coalesce
// period: the first at once, the rest gathered into one at the period's end.
func (w *watchers) forward(ctx context.Context, id string, changes <-chan struct{}) {
	var timer <-chan time.Time
	dirty := false
	notify := func() {
		_ = w.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: SessionURI(id)})
		timer, dirty = time.After(coalesce), false
	}
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			if timer == nil {
				notify()
			} else {
				dirty = true
			}
		case <-timer:
			timer = nil
			if dirty {
				notify()
			}
		}
	}
}
