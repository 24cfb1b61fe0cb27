package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"parley/hub"
	"parley/store"
)

const (
	writeWait   = 10 * time.Second
	pongWait    = 60 * time.Second
	pingPeriod  = pongWait * 9 / 10
	helloWait   = 10 * time.Second
	backlogPage = 400 // events per catch-up frame
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4 << 10,
	WriteBufferSize: 32 << 10,
	// A socket holds a write buffer only while it writes a merged message:
	// a thousand idle viewers do not keep 32 KiB each (prepared messages
	// need none).
	WriteBufferPool: &sync.Pool{},
	CheckOrigin:     sameOrigin,
}

// wsConn is one browser tab on one session: exactly one reader goroutine
// (its messages) and one writer (everything sent, pings and deadlines).
type wsConn struct {
	s      *Server
	conn   *websocket.Conn
	sess   store.Session
	r      *http.Request
	viewer string         // who is watching, for presence
	hello  chan int64     // the page's last seq, sent once it connects
	out    chan hub.Frame // frames for this tab only (errors)
	// ping is the writer's keepalive ticker, owned by the writer goroutine.
	ping *time.Ticker
	// looker records what the page shows visibly (reach).
	looker looker
	// ahead paces the page's requests to start the process ahead (ahead.go).
	ahead aheadClock
}

func (s *Server) handleSessionWS() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, v, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		conn, release, ok := s.upgradeWS(w, r, v.ID)
		if !ok {
			return
		}
		defer release()
		c := &wsConn{s: s, conn: conn, sess: sess, r: r, viewer: v.Name, hello: make(chan int64, 1), out: make(chan hub.Frame, 16),
			looker: newLooker(s, v.ID)}
		defer c.looker.look(context.WithoutCancel(r.Context()), false, sess.ID, sess.ProjectID)
		c.serve(r.Context())
	})
}

// serve runs the connection until either side ends it.
func (c *wsConn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.conn.Close()
	c.s.metrics.WSOpened()
	defer c.s.metrics.WSClosed()
	sub, err := c.s.hub.SubscribeAs(ctx, c.sess.ID, c.viewer)
	if err != nil {
		return
	}
	defer c.s.hub.Unsubscribe(sub)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		c.readLoop(ctx)
	}()
	if err := c.writeLoop(ctx, sub); err != nil && !errors.Is(err, context.Canceled) {
		c.s.log.Debug("websocket closed", "session_id", c.sess.ID, "err", err)
	}
	c.conn.Close() // unblocks the reader
	<-readerDone
}

// writeLoop waits for the page's hello, replays what it has not seen from
// Postgres, then streams live frames, skipping any it already has and
// filling any gap from Postgres: every event is shown once, in order.
func (c *wsConn) writeLoop(ctx context.Context, sub *hub.Subscription) error {
	ping := time.NewTicker(c.s.pingEvery()) // a keepalive, not a poll
	defer ping.Stop()
	c.ping = ping
	var last int64
	select {
	case last = <-c.hello:
	case <-time.After(helloWait):
	case <-ctx.Done():
		return ctx.Err()
	}
	last, err := c.catchUp(ctx, last)
	if err != nil {
		return err
	}
	// The page showed the line for a free slot as it was when rendered.
	if place, of := c.s.sup.QueuePlace(c.sess.ID); place > 0 {
		if err := c.write(queueFrame(place, of, "").Data); err != nil {
			return err
		}
	}
	for {
		select {
		case f, ok := <-sub.C:
			if !ok {
				// Dropped for being slow, or the server is stopping: the page
				// reconnects (1012 = service restart) and catches up.
				return c.close(websocket.CloseServiceRestart, "reconnect")
			}
			if last, err = c.forward(ctx, sub, f, last); err != nil {
				return err
			}
		case f := <-c.out:
			if err := c.write(f.Data); err != nil {
				return err
			}
		case <-ping.C:
			// A watcher whose sign-in was revoked or who left the project
			// stops receiving within a ping period (actions check at once).
			if code, reason, ended := c.accessEnded(ctx); ended {
				return c.close(code, reason)
			}
			if err := c.writePing(); err != nil {
				return err
			}
		case <-sub.Recheck: // access changed on some replica (hub/cluster.go)
			// The close-code contract (ws_close.go): 4001/4003 end the page,
			// a database error does not.
			if code, reason, ended := c.accessEnded(ctx); ended {
				return c.close(code, reason)
			}
		case <-ctx.Done():
			return c.close(websocket.CloseGoingAway, "bye")
		}
	}
}

// forward writes f and every frame already waiting behind it as one
// message, skipping what the page has and filling any gap from Postgres:
// every event is shown once, in order. It returns the new last seq.
func (c *wsConn) forward(ctx context.Context, sub *hub.Subscription, f hub.Frame, last int64) (int64, error) {
	if pm := f.Prepared(); pm != nil && !f.Unbound && len(sub.C) == 0 && (f.Seq == 0 || f.FirstSeq() == last+1) {
		// The usual case: the next frame, nothing behind it. Its message was
		// prepared once for every socket.
		c.s.metrics.FrameSent(c.sess.ID, f.Seq, f.Kind, f.Born)
		return max(last, f.Seq), c.writePrepared(pm)
	}
	var co hub.Coalescer
	var err error
	for n := 1; ; n++ {
		switch {
		case f.Seq != 0 && f.Seq <= last:
		case f.Seq != 0 && (f.FirstSeq() != last+1 || f.Unbound):
			// A gap, or deltas rendered without knowing their message:
			// the log has them.
			if b := co.Take(); b != nil {
				if err := c.write(b); err != nil {
					return last, err
				}
			}
			if last, err = c.catchUp(ctx, last); err != nil {
				return last, err
			}
		default:
			co.Add(f)
			c.s.metrics.FrameSent(c.sess.ID, f.Seq, f.Kind, f.Born)
			if f.Seq != 0 {
				last = f.Seq
			}
		}
		if n >= hub.MaxCoalesce {
			break
		}
		var ok bool
		select {
		case f, ok = <-sub.C:
		default:
		}
		if !ok {
			break // nothing waits; a closed channel is seen again by the caller
		}
	}
	if b := co.Take(); b != nil {
		return last, c.write(b)
	}
	return last, nil
}

// catchUp sends every event after seq from Postgres, a page at a time
// (memory stays bounded however long the log), and returns the new last seq.
func (c *wsConn) catchUp(ctx context.Context, after int64) (int64, error) {
	completed, err := c.s.st.CompletedMessages(ctx, c.sess.ID, after)
	if err != nil {
		return after, err
	}
	r := newPagedRenderer(completed)
	if after > 0 {
		// The page may be in the middle of a stream: which one is read
		// from the log if an event needs it.
		r.st, r.resolve = streamState{}, func(at int64) (streamState, bool) {
			o, err := c.s.st.StreamOpenAt(ctx, c.sess.ID, at)
			return fromOpenStream(o), err == nil
		}
	}
	for {
		f, n, err := c.replayPage(ctx, r, after)
		if err == nil && r.unbound {
			err = fmt.Errorf("catch up after %d: the open stream could not be read", after)
		}
		if err != nil || n == 0 {
			return after, err
		}
		if err := c.write(f.Data); err != nil {
			return after, err
		}
		after = f.Seq
		if err := c.keepAlive(); err != nil {
			return after, err
		}
		if n < backlogPage {
			return after, nil
		}
	}
}

// replayPage reads and renders the page after seq holding one of the
// server's replay slots; the socket write happens after it is released.
func (c *wsConn) replayPage(ctx context.Context, r *renderer, after int64) (hub.Frame, int, error) {
	for acquired := false; !acquired; {
		select {
		case c.s.replaySlots <- struct{}{}:
			acquired = true
		case <-c.ping.C:
			// Waiting for a slot in a join storm can outlast pongWait.
			if err := c.writePing(); err != nil {
				return hub.Frame{}, 0, err
			}
		case <-ctx.Done():
			return hub.Frame{}, 0, ctx.Err()
		}
	}
	defer func() { <-c.s.replaySlots }()
	evs, err := c.s.st.EventsAfter(ctx, c.sess.ID, after, backlogPage)
	if err != nil || len(evs) == 0 {
		return hub.Frame{}, 0, err
	}
	return c.s.withDeliveries(ctx, r.frame(ctx, evs), evs), len(evs), nil
}

// keepAlive pings the page when a ping period has passed. A catch-up holds
// the writer for as long as it takes (minutes, in a storm of a thousand
// joins); without pings the reader's pongWait deadline would end a healthy
// connection, and the page would reconnect and catch up all over again.
func (c *wsConn) keepAlive() error {
	select {
	case <-c.ping.C:
		return c.writePing()
	default:
		return nil
	}
}

func (c *wsConn) writePing() error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WriteMessage(websocket.PingMessage, nil)
}

func (c *wsConn) write(b []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WriteMessage(websocket.TextMessage, b)
}

// writePrepared writes a message prepared for every socket (hub.Frame.Prepared).
func (c *wsConn) writePrepared(pm *websocket.PreparedMessage) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WritePreparedMessage(pm)
}

func (c *wsConn) close(code int, text string) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, text))
}

// send queues a frame for this tab; it is dropped if the tab is not reading.
func (c *wsConn) send(f hub.Frame) {
	select {
	case c.out <- f:
	default:
	}
}
