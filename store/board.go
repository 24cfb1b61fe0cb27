package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SessionsChannel is the NOTIFY channel on which every change of a
// session's place on a sidebar or board is announced (migration 0025):
// the payload is "project_id session_id", ids only.
const SessionsChannel = "parley_sessions"

// BoardRow is a session as a sidebar or board shows it to one person.
type BoardRow struct {
	ID          string    `db:"id"`
	ProjectID   int64     `db:"project_id"`
	ProjectName string    `db:"project_name"`
	Title       string    `db:"title"`
	Status      string    `db:"status"`
	CreatedBy   string    `db:"created_by"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	Archived    bool      `db:"archived"`
	// Role is the person's role in the project ("" for an admin who is
	// not a member).
	Role string `db:"role"`
	// Pending counts the session's open asks; AskedAt is when the oldest
	// of them opened (zero without one).
	Pending int       `db:"pending"`
	AskedAt time.Time `db:"asked_at"`
	// LastSeq is the seq of the session's newest event, ReadSeq the
	// newest the person has seen (0: none).
	LastSeq int64 `db:"last_seq"`
	ReadSeq int64 `db:"read_seq"`
}

// boardSelect selects BoardRow columns for the person $1; callers add
// WHERE, ORDER BY and LIMIT.
const boardSelect = `
	SELECT s.id, s.project_id, p.name AS project_name, s.title, s.status, s.created_by, s.created_at,
		s.updated_at, s.archived_at IS NOT NULL AS archived, coalesce(m.role, '') AS role,
		coalesce(a.pending, 0) AS pending, coalesce(a.asked_at, 'epoch'::timestamptz) AS asked_at,
		coalesce(e.seq, 0) AS last_seq, coalesce(r.seq, 0) AS read_seq
	FROM sessions s
	JOIN projects p ON p.id = s.project_id
	LEFT JOIN project_members m ON m.project_id = s.project_id AND m.user_id = $1
	LEFT JOIN session_reads r ON r.session_id = s.id AND r.user_id = $1
	LEFT JOIN LATERAL (
		SELECT count(*) AS pending, min(i.created_at) AS asked_at
		FROM inputs i WHERE i.session_id = s.id AND i.status = 'pending'
	) a ON true
	LEFT JOIN LATERAL (
		SELECT e.seq FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1
	) e ON true`

// boardRows runs a boardSelect query and collects its rows.
func (s *Store) boardRows(ctx context.Context, op, sql string, args ...any) ([]BoardRow, error) {
	rows, _ := s.pool.Query(ctx, boardSelect+sql, args...)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[BoardRow])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return list, nil
}

// SidebarSessions returns the project's newest sessions as userID sees
// them (not archived, most recently updated first, at most limit), and
// how many sessions the project has in all.
func (s *Store) SidebarSessions(ctx context.Context, projectID, userID int64, limit int) ([]BoardRow, int, error) {
	list, err := s.boardRows(ctx, fmt.Sprintf("sidebar of project %d", projectID), `
		WHERE s.id IN (
			SELECT x.id FROM sessions x WHERE x.project_id = $2 AND x.archived_at IS NULL
			ORDER BY x.updated_at DESC, x.created_at DESC LIMIT $3)
		ORDER BY s.updated_at DESC, s.created_at DESC`, userID, projectID, limit)
	if err != nil {
		return nil, 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE project_id = $1 AND archived_at IS NULL`,
		projectID).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("count sessions of project %d: %w", projectID, err)
	}
	return list, n, nil
}

// BoardSessions returns, in the projects, the sessions a board shows to
// userID: those with an open ask, those running, and those whose status
// changed since since; at most limit of each kind.
func (s *Store) BoardSessions(ctx context.Context, projectIDs []int64, userID int64, since time.Time, limit int) ([]BoardRow, error) {
	return s.boardRows(ctx, fmt.Sprintf("board of projects %v", projectIDs), `
		WHERE s.project_id = ANY($2) AND s.archived_at IS NULL AND s.id IN (
			(SELECT i.session_id FROM inputs i JOIN sessions x ON x.id = i.session_id
			 WHERE i.status = 'pending' AND x.project_id = ANY($2) AND x.archived_at IS NULL
			 GROUP BY i.session_id ORDER BY min(i.created_at) LIMIT $4)
			UNION ALL
			(SELECT x.id FROM sessions x WHERE x.project_id = ANY($2) AND x.archived_at IS NULL
			 AND x.status = 'running' ORDER BY x.updated_at DESC LIMIT $4)
			UNION ALL
			(SELECT x.id FROM sessions x WHERE x.project_id = ANY($2) AND x.archived_at IS NULL
			 AND x.status NOT IN ('running', 'idle') AND x.updated_at >= $3 ORDER BY x.updated_at DESC LIMIT $4))
		ORDER BY s.updated_at DESC`, userID, projectIDs, since, limit)
}

// BoardSessionsByID returns the sessions with ids as userID sees them;
// those that are gone are left out.
func (s *Store) BoardSessionsByID(ctx context.Context, ids []string, userID int64) ([]BoardRow, error) {
	return s.boardRows(ctx, fmt.Sprintf("board sessions %v", ids), `
		WHERE s.id = ANY($2::uuid[])`, userID, ids)
}

// NeedsCount counts the project's sessions (not archived) with an open ask.
func (s *Store) NeedsCount(ctx context.Context, projectID int64) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(DISTINCT i.session_id) FROM inputs i JOIN sessions s ON s.id = i.session_id
		WHERE i.status = 'pending' AND s.project_id = $1 AND s.archived_at IS NULL`, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count sessions waiting in project %d: %w", projectID, err)
	}
	return n, nil
}

// MarkRead records that userID has seen every event of the session so
// far; a mark never moves back.
func (s *Store) MarkRead(ctx context.Context, userID int64, sessionID string) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO session_reads (user_id, session_id, seq)
		SELECT $1, $2, coalesce((SELECT max(seq) FROM events WHERE session_id = $2), 0)
		ON CONFLICT (user_id, session_id) DO UPDATE
		SET seq = greatest(session_reads.seq, excluded.seq), read_at = now()`, userID, sessionID)
	if err != nil {
		return fmt.Errorf("mark session %s read by user %d: %w", sessionID, userID, err)
	}
	return nil
}
