package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"parley/askuser"
)

// Expire ends a detached ask of the session that nobody answered in time,
// with status expired and reason. It goes through the session's live run
// when there is one (the run is the single writer of the log); otherwise
// it resolves the ask itself while holding the supervisor's lock, so no run
// of the session can start and number events meanwhile. An ask that a live
// process still waits for is never expired: it returns ErrNotPending, as
// does an ask answered meanwhile.
func (s *Supervisor) Expire(ctx context.Context, projectID int64, sessionID, inputID, reason string) error {
	s.mu.Lock()
	r, live := s.runs[sessionID]
	if live {
		s.mu.Unlock()
		reply := make(chan error, 1)
		return r.send(ctx, expireCmd{id: inputID, reason: reason, reply: reply}, reply)
	}
	defer s.mu.Unlock()
	p, err := loadAsk(ctx, s.journal, sessionID, inputID)
	if err != nil {
		return err
	}
	last, err := s.journal.LastSeq(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("expire ask %s: %w", inputID, err)
	}
	resp := Response{Reason: reason}
	payload, err := resolutionPayload(p, askuser.StatusExpired, resp, true)
	if err != nil {
		return err
	}
	e := Event{SessionID: sessionID, ProjectID: projectID, Seq: last + 1, Type: TypeInputResolved, Payload: payload, CreatedAt: time.Now()}
	if err := s.journal.ResolveInput(ctx, inputID, string(askuser.StatusExpired), mustJSON(resp), "", e); err != nil {
		return err
	}
	s.pub.Publish(e)
	logResolved(s.log.With("session_id", sessionID), p, string(askuser.StatusExpired), resp, true)
	return nil
}

// mustJSON encodes v, which is known to encode.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
