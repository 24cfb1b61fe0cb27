package server

import (
	"bytes"
	"context"

	"parley/hub"
	"parley/views"
)

// DatabaseWaiting implements runner.DatabaseObserver: a run on this replica
// is waiting for the database (its writes are retried and Claude's output
// held), or its writes succeed again. The status goes through the hub to
// this replica's viewers of the session; it cannot be stored, the database
// being away, so a page loaded later does not show it.
func (p *Publisher) DatabaseWaiting(sessionID string, waiting bool) {
	var buf bytes.Buffer
	_ = views.DatabaseWait(waiting, true).Render(context.Background(), &buf)
	p.hub.Publish(sessionID, hub.Frame{Data: buf.Bytes(), Kind: "db_wait"})
}
