package store

import (
	"context"
	"fmt"
)

// SignalsChannel carries what every replica must act on at once: the
// viewers of a session on one replica, a session or project whose runs
// must stop, access that changed. Payloads are small JSON (cluster).
const SignalsChannel = "parley_signals"

// Signal NOTIFYs payload on SignalsChannel.
func (s *Store) Signal(ctx context.Context, payload string) error {
	if len(payload) > maxNotifyPayload {
		return fmt.Errorf("signal: payload of %d bytes is over the limit of %d", len(payload), maxNotifyPayload)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, SignalsChannel, payload); err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	return nil
}
