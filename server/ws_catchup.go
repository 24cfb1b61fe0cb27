package server

import "context"

// catchUp sends every event after seq from Postgres, a page at a time
// (memory stays bounded however long the log), and returns the new last
// seq. The caller holds wmu.
func (c *wsConn) catchUp(ctx context.Context, after int64) (int64, error) {
	completed, err := c.s.st.CompletedMessages(ctx, c.sess.ID, after)
	if err != nil {
		return after, err
	}
	r := newPagedRenderer(completed)
	for {
		f, n, err := c.replayPage(ctx, r, after)
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
func (c *wsConn) replayPage(ctx context.Context, r *renderer, after int64) (Frame, int, error) {
	for acquired := false; !acquired; {
		select {
		case c.s.replaySlots <- struct{}{}:
			acquired = true
		case <-c.ping.C:
			// Waiting for a slot in a join storm can outlast pongWait.
			if err := c.writePing(); err != nil {
				return Frame{}, 0, err
			}
		case <-ctx.Done():
			return Frame{}, 0, ctx.Err()
		}
	}
	defer func() { <-c.s.replaySlots }()
	evs, err := c.s.st.EventsAfter(ctx, c.sess.ID, after, backlogPage)
	if err != nil || len(evs) == 0 {
		return Frame{}, 0, err
	}
	return r.frame(ctx, evs), len(evs), nil
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
