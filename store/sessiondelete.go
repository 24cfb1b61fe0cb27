package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// DeletedSession is the tombstone of a deleted session: what the pages
// and a second delete say about it, and what its cleanup on disk needs
// (the CLI's session id for its transcript, the branch). CleanedAt is
// nil until its worktree, branch and transcript are gone.
type DeletedSession struct {
	ID              string     `db:"id"`
	ProjectID       int64      `db:"project_id"`
	ClaudeSessionID string     `db:"claude_session_id"`
	Title           string     `db:"title"`
	Branch          string     `db:"branch"`
	DeletedBy       string     `db:"deleted_by"`
	Reason          string     `db:"reason"`
	DeletedAt       time.Time  `db:"deleted_at"`
	CleanedAt       *time.Time `db:"cleaned_at"`
}

// Reasons a session was deleted (deleted_sessions.reason).
const (
	DeletedByOwner     = "owner"
	DeletedByRetention = "retention"
)

const deletedColumns = `id, project_id, claude_session_id, title, branch, deleted_by, reason, deleted_at, cleaned_at`

// ErrSessionActive refuses a retention delete: the session has a live
// run, a pending ask or work in line, or was active within its project's
// retention, or its project's retention is off now.
var ErrSessionActive = errors.New("the session is not idle")

// idleSession is the condition, on sessions s joined with its project's
// project_retention r, that retention may delete s: nothing runs, waits
// or is in line, and its last activity (the session's own update or its
// log's last event) is older than r.idle_days.
const idleSession = `s.status NOT IN ('running', 'waiting')
	AND greatest(s.updated_at, coalesce((SELECT e.created_at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1), s.updated_at))
		< now() - make_interval(days => r.idle_days)
	AND NOT EXISTS (SELECT 1 FROM runs u WHERE u.session_id = s.id AND u.ended_at IS NULL)
	AND NOT EXISTS (SELECT 1 FROM inputs i WHERE i.session_id = s.id AND i.status = 'pending')
	AND NOT EXISTS (SELECT 1 FROM session_line l WHERE l.session_id = s.id)`

// DeleteSession deletes the session's rows, in one transaction, and
// leaves its tombstone: every row that names the session goes with it
// (the foreign keys cascade: events, inputs and their reach rows, runs,
// options, leases, the line, who was looking), and so do requests other
// replicas had not served for it. A turn's spending stays (turn_costs
// keeps it without the session). retention says the sweeper deletes:
// the session must still be idle (idleSession), else ErrSessionActive.
// A session gone already is ErrNotFound.
func (s *Store) DeleteSession(ctx context.Context, id, by string, retention bool) (DeletedSession, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: %w", id, err)
	}
	defer tx.Rollback(ctx)
	// FOR UPDATE: a run's write into the session's tables waits for this
	// transaction (its foreign key check locks the row shared) and then
	// fails, so no row of the session is left behind.
	rows, _ := tx.Query(ctx, `
		SELECT id, project_id, claude_session_id, title, worktree_branch AS branch
		FROM sessions WHERE id = $1 FOR UPDATE`, id)
	d, err := pgx.CollectOneRow(rows, pgx.RowToStructByNameLax[DeletedSession])
	if err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: %w", id, notFound(err))
	}
	if retention {
		if err := stillIdle(ctx, tx, id); err != nil {
			return DeletedSession{}, err
		}
	}
	d.DeletedBy, d.Reason = by, DeletedByOwner
	if retention {
		d.Reason = DeletedByRetention
	}
	if err := tx.QueryRow(ctx, `
		INSERT INTO deleted_sessions (id, project_id, claude_session_id, title, branch, deleted_by, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING deleted_at`,
		d.ID, d.ProjectID, d.ClaudeSessionID, d.Title, d.Branch, d.DeletedBy, d.Reason).Scan(&d.DeletedAt); err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: tombstone: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM cluster_requests WHERE session_id = $1`, id); err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: requests: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id); err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return DeletedSession{}, fmt.Errorf("delete session %s: %w", id, err)
	}
	return d, nil
}

// stillIdle checks, inside the delete's transaction, that retention may
// still delete the session.
func stillIdle(ctx context.Context, tx pgx.Tx, id string) error {
	var idle bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions s
		JOIN project_retention r ON r.project_id = s.project_id
		WHERE s.id = $1 AND `+idleSession+`)`, id).Scan(&idle)
	if err != nil {
		return fmt.Errorf("delete session %s: check idle: %w", id, err)
	}
	if !idle {
		return fmt.Errorf("delete session %s: %w", id, ErrSessionActive)
	}
	return nil
}

// DeletedSessionOf returns the tombstone of a deleted session, or
// ErrNotFound (never deleted, or its project is gone too).
func (s *Store) DeletedSessionOf(ctx context.Context, id string) (DeletedSession, error) {
	if uuid.Validate(id) != nil {
		return DeletedSession{}, fmt.Errorf("deleted session %s: %w", id, ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+deletedColumns+` FROM deleted_sessions WHERE id = $1`, id)
	d, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[DeletedSession])
	if err != nil {
		return DeletedSession{}, fmt.Errorf("deleted session %s: %w", id, notFound(err))
	}
	return d, nil
}

// MarkSessionCleaned records that a deleted session's worktree, branch
// and transcript are gone.
func (s *Store) MarkSessionCleaned(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE deleted_sessions SET cleaned_at = coalesce(cleaned_at, now()) WHERE id = $1`, id); err != nil {
		return fmt.Errorf("mark deleted session %s cleaned: %w", id, err)
	}
	return nil
}

// DeletedSessionsToClean lists deleted sessions whose cleanup on disk has
// not finished, and those deleted within the last day (a start that
// slipped past their delete may have left a process or a worktree),
// oldest first, at most limit.
func (s *Store) DeletedSessionsToClean(ctx context.Context, limit int) ([]DeletedSession, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+deletedColumns+` FROM deleted_sessions
		WHERE cleaned_at IS NULL OR deleted_at > now() - interval '1 day' ORDER BY deleted_at LIMIT $1`, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[DeletedSession])
	if err != nil {
		return nil, fmt.Errorf("deleted sessions to clean: %w", err)
	}
	return list, nil
}

// IdleSession is a session retention may delete.
type IdleSession struct {
	ID        string `db:"id"`
	ProjectID int64  `db:"project_id"`
	IdleDays  int    `db:"idle_days"`
}

// IdleSessions lists, across projects with retention on, sessions idle
// for longer than their project allows (idleSession), least recently
// updated first, at most limit.
func (s *Store) IdleSessions(ctx context.Context, limit int) ([]IdleSession, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT s.id, s.project_id, r.idle_days FROM sessions s
		JOIN project_retention r ON r.project_id = s.project_id
		WHERE `+idleSession+`
		ORDER BY s.updated_at LIMIT $1`, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[IdleSession])
	if err != nil {
		return nil, fmt.Errorf("idle sessions: %w", err)
	}
	return list, nil
}

// ProjectRetention is the project's retention in days; 0 = off.
func (s *Store) ProjectRetention(ctx context.Context, projectID int64) (int, error) {
	var days int
	err := s.pool.QueryRow(ctx, `SELECT idle_days FROM project_retention WHERE project_id = $1`, projectID).Scan(&days)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("retention of project %d: %w", projectID, err)
	}
	return days, nil
}

// SetProjectRetention sets the project's retention in days; 0 turns it off.
func (s *Store) SetProjectRetention(ctx context.Context, projectID int64, days int) error {
	var err error
	if days == 0 {
		_, err = s.pool.Exec(ctx, `DELETE FROM project_retention WHERE project_id = $1`, projectID)
	} else {
		_, err = s.pool.Exec(ctx, `
			INSERT INTO project_retention (project_id, idle_days) VALUES ($1, $2)
			ON CONFLICT (project_id) DO UPDATE SET idle_days = $2, updated_at = now()`, projectID, days)
	}
	if err != nil {
		return fmt.Errorf("set retention of project %d: %w", projectID, err)
	}
	return nil
}

// TryRetentionLock takes the cluster-wide lock of the retention sweep
// without waiting: ok is false while another replica sweeps. The lock is
// a session advisory lock held by one connection of the pool until
// release, so a replica that dies mid-sweep frees it with its connection.
// A pool of fewer than 4 connections holds none (the sweep needs others
// while it holds it; a pool of one would wait for itself): every replica
// may then sweep at once, which DeleteSession makes safe (a session is
// deleted once, the others find it gone), only not frugal.
func (s *Store) TryRetentionLock(ctx context.Context) (release func(), ok bool, err error) {
	if cap(s.lockSlots) < 2 {
		return func() {}, true, nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("retention lock: %w", err)
	}
	const key = `hashtext('parley.retention')`
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+key+`)`).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fmt.Errorf("retention lock: %w", err)
		}
		return nil, false, nil
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			_ = conn.Conn().Close(uctx) // closing frees it
		}
		conn.Release()
	}, true, nil
}

// SessionFootprint is what a session holds, for its delete's confirmation.
type SessionFootprint struct {
	Events, Asks, PendingAsks, Runs int64
	Running                         bool // a run of it is open
}

// SessionFootprintOf counts the session's log entries, asks and runs.
func (s *Store) SessionFootprintOf(ctx context.Context, id string) (SessionFootprint, error) {
	var f SessionFootprint
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM events WHERE session_id = $1),
		(SELECT count(*) FROM inputs WHERE session_id = $1),
		(SELECT count(*) FROM inputs WHERE session_id = $1 AND status = 'pending'),
		(SELECT count(*) FROM runs WHERE session_id = $1),
		EXISTS (SELECT 1 FROM runs WHERE session_id = $1 AND ended_at IS NULL)`, id).
		Scan(&f.Events, &f.Asks, &f.PendingAsks, &f.Runs, &f.Running)
	if err != nil {
		return f, fmt.Errorf("footprint of session %s: %w", id, err)
	}
	return f, nil
}
