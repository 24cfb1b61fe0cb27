package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Answers from outside the server (`parley asks answer`) travel through
// Postgres: the command NOTIFYs a request on answerChannel; the server that
// LISTENs there applies it exactly as an answer from a page (the live run
// delivers it, or the session resumes), then NOTIFYs the outcome on
// answerResultChannel. Payloads are JSON and carry ids, never secrets.
const (
	answerChannel       = "parley_answers"
	answerResultChannel = "parley_answer_results"
)

// maxNotifyPayload is Postgres's limit on a NOTIFY payload, less a margin.
const maxNotifyPayload = 7900

// ErrNoListener means no Parley server listens for answers on the database.
var ErrNoListener = errors.New("no Parley server is running on this database (start parley serve, then try again)")

// AnswerRequest is an answer sent from a terminal.
type AnswerRequest struct {
	ID       string          `json:"id"` // the request's own id, to match its result
	InputID  string          `json:"input_id"`
	UserID   int64           `json:"user_id"`
	Response json.RawMessage `json:"response"` // a runner.Response
	// ResponseObject is the large object that holds Response when it is
	// too long for a NOTIFY payload (remote_large.go); 0 = none.
	ResponseObject uint32 `json:"response_object,omitempty"`
	// Replica is the one replica to apply it: the session's owner, else
	// any live one; "" = every replica that listens.
	Replica string `json:"replica,omitempty"`
}

// AnswerResult is how the server applied an AnswerRequest.
type AnswerResult struct {
	ID        string `json:"id"`
	OK        bool   `json:"ok"`
	Message   string `json:"message"` // why not, in a sentence; or what happened
	SessionID string `json:"session_id,omitempty"`
}

// UserByID returns the user with id, or ErrNotFound.
func (s *Store) UserByID(ctx context.Context, id int64) (User, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`, id)
	u, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[User])
	if err != nil {
		return User{}, fmt.Errorf("user %d: %w", id, notFound(err))
	}
	return u, nil
}

// OpenAsksFor returns the pending inputs the user may answer (a member or
// owner of a project that is not archived; an admin everywhere), oldest
// first.
func (s *Store) OpenAsksFor(ctx context.Context, userID int64, admin bool) ([]InboxInput, error) {
	list, err := s.inbox(ctx, selectInbox+`
		LEFT JOIN project_members m ON m.project_id = p.id AND m.user_id = $1
		WHERE i.status = 'pending' AND p.archived_at IS NULL AND ($2 OR m.role IN ('owner', 'member'))
		ORDER BY i.created_at, i.id`, userID, admin)
	if err != nil {
		return nil, fmt.Errorf("open asks of user %d: %w", userID, err)
	}
	return list, nil
}

// RequestAnswer sends req to the server listening on the database and
// waits for its result until ctx ends. It returns ErrNoListener at once
// when no server listens.
func (s *Store) RequestAnswer(ctx context.Context, req AnswerRequest) (AnswerResult, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: %w", err)
	}
	if len(payload) > maxNotifyPayload {
		unlink, err := s.stashResponse(ctx, &req)
		if err != nil {
			return AnswerResult{}, err
		}
		defer unlink()
		if payload, err = json.Marshal(req); err != nil {
			return AnswerResult{}, fmt.Errorf("request answer: %w", err)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: %w", err)
	}
	// LISTEN state belongs to the connection: it must not go back to the
	// pool, so it is closed instead.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN "+answerResultChannel); err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: listen: %w", err)
	}
	var listeners int
	// A listening server's connection is idle with LISTEN as its last query.
	if err := pc.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+answerChannel+`'`).Scan(&listeners); err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: find the server: %w", err)
	}
	if listeners == 0 {
		return AnswerResult{}, ErrNoListener
	}
	// The replica owning the session applies the answer, once; with no
	// owner, one live replica does (and takes the session).
	if err := pc.QueryRow(ctx, `SELECT coalesce(
			(SELECT l.replica_id FROM inputs i JOIN session_leases l ON l.session_id = i.session_id
				JOIN replicas r ON r.id = l.replica_id AND r.expires_at > now() WHERE i.id::text = $1),
			(SELECT id FROM replicas WHERE expires_at > now() AND NOT draining ORDER BY random() LIMIT 1), '')`,
		req.InputID).Scan(&req.Replica); err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: find the session's replica: %w", err)
	}
	if req.Replica != "" {
		listeners = 1
		if payload, err = json.Marshal(req); err != nil {
			return AnswerResult{}, fmt.Errorf("request answer: %w", err)
		}
	}
	if _, err := pc.Exec(ctx, `SELECT pg_notify($1, $2)`, answerChannel, string(payload)); err != nil {
		return AnswerResult{}, fmt.Errorf("request answer: notify: %w", err)
	}
	// The replica named applies the request and answers. Without one (no
	// replica rows: a server from before replicas), every listening
	// replica does; one succeeds (the ask resolves exactly once) and the
	// others say it was answered already. Take a success at once, else
	// the first refusal once every listener has answered.
	var first *AnswerResult
	for got := 0; got < listeners; {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			if first != nil {
				return *first, nil
			}
			return AnswerResult{}, fmt.Errorf("request answer: wait for the server: %w", err)
		}
		var res AnswerResult
		if json.Unmarshal([]byte(n.Payload), &res) != nil || res.ID != req.ID {
			continue
		}
		if res.OK {
			return res, nil
		}
		if first == nil {
			first = &res
		}
		got++
	}
	return *first, nil
}

// ListenAnswers calls handle for every AnswerRequest sent to the database
// and NOTIFYs its result, until ctx ends. handle runs on its own goroutine
// per request (an answer that resumes a session takes seconds); all have
// returned when ListenAnswers does. A lost connection is reopened after a
// pause.
func (s *Store) ListenAnswers(ctx context.Context, handle func(context.Context, AnswerRequest) AnswerResult, onErr func(error)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		err := s.listen(ctx, func(req AnswerRequest) {
			wg.Go(func() {
				res := handle(ctx, req)
				res.ID = req.ID
				s.notifyResult(context.WithoutCancel(ctx), res, onErr)
			})
		})
		if ctx.Err() != nil {
			return
		}
		onErr(err)
		t := time.NewTimer(5 * time.Second)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// listen holds one LISTEN connection and hands each request to start.
func (s *Store) listen(ctx context.Context, start func(AnswerRequest)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen for answers: %w", err)
	}
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN "+answerChannel); err != nil {
		return fmt.Errorf("listen for answers: %w", err)
	}
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("listen for answers: %w", err)
		}
		var req AnswerRequest
		if err := json.Unmarshal([]byte(n.Payload), &req); err != nil || req.ID == "" {
			continue // not ours to answer: nobody waits for a result without an id
		}
		if req.Replica != "" && req.Replica != s.replica {
			continue // another replica's to apply
		}
		s.loadResponse(ctx, &req)
		start(req)
	}
}

func (s *Store) notifyResult(ctx context.Context, res AnswerResult, onErr func(error)) {
	b, _ := json.Marshal(res)
	if len(b) > maxNotifyPayload {
		res.Message = res.Message[:200] + "…"
		b, _ = json.Marshal(res)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, answerResultChannel, string(b)); err != nil {
		onErr(fmt.Errorf("notify answer result: %w", err))
	}
}
