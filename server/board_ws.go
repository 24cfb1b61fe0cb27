package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"

	"parley/board"
	"parley/hub"
	"parley/store"
)

// boardGather is how long a page's socket gathers pokes into one read: a
// session's ask and status change, a moment apart, cost one query.
const boardGather = 20 * time.Millisecond

// boardConn is one page's sidebar or board socket. It subscribes to the
// topics of its projects (board.Topic); each poke names a session, which
// the socket reads again as its person sees it and puts where it goes
// (board.Live). A poke that names none reads everything again.
type boardConn struct {
	s    *Server
	conn *websocket.Conn
	r    *http.Request
	v    viewer
	// project is a sidebar's project (zero for the board), role the
	// viewer's role there, current the session open in the page.
	project  store.Project
	role     string
	current  string
	projects []int64
	live     *board.Live

	mu      sync.Mutex
	changed map[string]bool
	all     bool
	poked   chan struct{} // a read is due
	recheck chan struct{} // access is to be checked again now
}

// handleSidebarWS keeps a project's sidebar live; a project the viewer
// may not see is refused before the upgrade.
func (s *Server) handleSidebarWS() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, role, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		c := &boardConn{s: s, r: r, v: v, project: p, role: role, projects: []int64{p.ID}}
		c.current = s.currentIn(r.Context(), r, v, p.ID)
		s.serveBoardConn(w, r, c)
	})
}

// handleBoardWS keeps the home page's board live.
func (s *Server) handleBoardWS() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		ids, err := s.projectsOf(r.Context(), v)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.serveBoardConn(w, r, &boardConn{s: s, r: r, v: v, projects: ids})
	})
}

func (s *Server) serveBoardConn(w http.ResponseWriter, r *http.Request, c *boardConn) {
	conn, release, ok := s.upgradeWS(w, r, c.v.ID)
	if !ok {
		return
	}
	defer release()
	c.conn, c.changed = conn, map[string]bool{}
	c.poked, c.recheck = make(chan struct{}, 1), make(chan struct{}, 1)
	c.serve(r.Context())
	if c.current != "" { // what the page showed until it closed was seen
		_ = s.st.MarkRead(context.WithoutCancel(r.Context()), c.v.ID, c.current)
	}
}

func (c *boardConn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.conn.Close()
	var wg sync.WaitGroup
	var subs []*hub.Subscription
	defer func() {
		for _, sub := range subs {
			c.s.hub.Unsubscribe(sub)
		}
		wg.Wait()
	}()
	for _, p := range c.projects {
		sub, err := c.s.hub.Subscribe(ctx, board.Topic(p))
		if err != nil {
			return
		}
		subs = append(subs, sub)
		wg.Go(func() { c.forward(sub, cancel) })
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		c.readLoop()
	}()
	if err := c.writeLoop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		c.s.log.Debug("board websocket closed", "err", err)
	}
	c.conn.Close()
	<-readerDone
}

// forward notes the sessions a subscription's pokes name until the hub
// closes it (Unsubscribe, or dropped: the page reconnects).
func (c *boardConn) forward(sub *hub.Subscription, cancel func()) {
	for {
		select {
		case f, ok := <-sub.C:
			if !ok {
				cancel()
				return
			}
			c.mu.Lock()
			if f.About == "" {
				c.all = true
			} else {
				c.changed[f.About] = true
			}
			c.mu.Unlock()
			markDue(c.poked)
		case <-sub.Recheck:
			markDue(c.recheck)
		}
	}
}

// markDue marks ch's work due unless it already is.
func markDue(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *boardConn) writeLoop(ctx context.Context) error {
	ping := time.NewTicker(c.s.pingEvery()) // a keepalive, not a poll
	defer ping.Stop()
	gather := time.NewTimer(boardGather)
	gather.Stop()
	if err := c.refreshAll(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-c.poked:
			gather.Reset(boardGather)
		case <-gather.C:
			if err := c.refresh(ctx); err != nil {
				return err
			}
		case <-c.recheck:
			if err := c.checkAccess(ctx); err != nil {
				return err
			}
		case <-ping.C:
			if err := c.checkAccess(ctx); err != nil {
				return err
			}
			c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkAccess ends the socket with the close code the page knows when
// the sign-in ended or the viewer may no longer see what it shows.
func (c *boardConn) checkAccess(ctx context.Context) error {
	code, reason := 0, ""
	if c.s.signInEnded(ctx, c.r, c.v.ID) {
		code, reason = closeSignedOut, reasonSignedOut
	} else if c.project.ID != 0 {
		cctx, cancel := context.WithTimeout(ctx, writeWait)
		_, err := c.s.checkAccess(cctx, c.v, c.project.ID, actView)
		cancel()
		code, reason, _ = accessEnded(err)
	} else if ids, err := c.s.projectsOf(ctx, c.v); err == nil && !slices.Equal(ids, c.projects) {
		code, reason = websocket.CloseNormalClosure, "Your projects changed." // the page reconnects
	}
	if code == 0 {
		return nil
	}
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	_ = c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason))
	return errors.New(reason)
}

// readLoop reads only to see pongs and the close; pages send nothing.
func (c *boardConn) readLoop() {
	c.conn.SetReadLimit(512)
	c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := c.conn.ReadMessage(); err != nil {
			return
		}
	}
}

// take returns the sessions poked since the last read, or all.
func (c *boardConn) take() (ids []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.changed {
		ids = append(ids, id)
	}
	clear(c.changed)
	all, c.all = c.all, false
	return ids, all
}

func (c *boardConn) write(ctx context.Context, parts []templ.Component) error {
	f, err := renderFrame(ctx, templ.Join(parts...))
	if err != nil {
		return err
	}
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WriteMessage(websocket.TextMessage, f.Data)
}
