package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditRow is one row of the audit trail (package audit chains and checks
// them). Zero ActorID, ProjectID and empty SessionID are NULL in the table.
type AuditRow struct {
	ID        int64
	At        time.Time
	ActorID   int64
	ActorName string
	Source    string // the client address
	Surface   string
	Action    string
	ProjectID int64
	SessionID string
	Target    string
	Detail    []byte // a JSON object
	PrevHash  []byte
	Hash      []byte
}

// AuditFilter selects audit rows. Restrict limits them to Projects (an
// owner's view; rows of no project are left out); the zero value is every
// row.
type AuditFilter struct {
	Restrict  bool
	Projects  []int64
	ProjectID int64
	Actor     string // a part of the actor's name
	Action    string
	Since     time.Time
	Until     time.Time
	BeforeID  int64 // only rows older than this id (the page's paging)
	Limit     int   // 0 = no limit
	Newest    bool  // newest first
}

const auditColumns = `id, at, coalesce(actor_id, 0), actor_name, source, surface, action,
	coalesce(project_id, 0), coalesce(session_id, ''), target, detail, prev_hash, hash`

// AppendAudit adds row to the end of the audit trail. Appends are
// serialized by a transaction-level advisory lock, so every replica's rows
// form one chain: seal gets the row with its id and the previous row's
// hash (empty for the first row) and returns its hash.
func (s *Store) AppendAudit(ctx context.Context, row AuditRow, seal func(AuditRow) []byte) (AuditRow, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return row, fmt.Errorf("append audit row: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parley.audit_log'))`); err != nil {
		return row, fmt.Errorf("lock the audit trail: %w", err)
	}
	row.PrevHash = []byte{}
	err = tx.QueryRow(ctx, `SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1`).Scan(&row.PrevHash)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return row, fmt.Errorf("read the audit trail's last hash: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT nextval('audit_log_id_seq')`).Scan(&row.ID); err != nil {
		return row, fmt.Errorf("next audit id: %w", err)
	}
	row.Hash = seal(row)
	_, err = tx.Exec(ctx, `
		INSERT INTO audit_log (id, at, actor_id, actor_name, source, surface, action,
			project_id, session_id, target, detail, prev_hash, hash)
		VALUES ($1, $2, nullif($3, 0), $4, $5, $6, $7, nullif($8, 0), nullif($9, ''), $10, $11::jsonb, $12, $13)`,
		row.ID, row.At, row.ActorID, row.ActorName, row.Source, row.Surface, row.Action,
		row.ProjectID, row.SessionID, row.Target, string(row.Detail), row.PrevHash, row.Hash)
	if err != nil {
		return row, fmt.Errorf("insert audit row %d: %w", row.ID, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return row, fmt.Errorf("commit audit row %d: %w", row.ID, err)
	}
	s.auditCommitted(row)
	return row, nil
}

// EachAuditRow calls fn with each row f selects, oldest first unless
// f.Newest, streaming them: a long trail is never held in memory.
func (s *Store) EachAuditRow(ctx context.Context, f AuditFilter, fn func(AuditRow) error) error {
	order := "ASC"
	if f.Newest {
		order = "DESC"
	}
	var since, until *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	if !f.Until.IsZero() {
		until = &f.Until
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+auditColumns+` FROM audit_log
		WHERE (NOT $1 OR project_id = ANY($2::bigint[]))
		  AND ($3::bigint = 0 OR project_id = $3)
		  AND ($4::text = '' OR strpos(lower(actor_name), lower($4)) > 0)
		  AND ($5::text = '' OR action = $5)
		  AND ($6::timestamptz IS NULL OR at >= $6)
		  AND ($7::timestamptz IS NULL OR at < $7)
		  AND ($8::bigint = 0 OR id < $8)
		ORDER BY id `+order+`
		LIMIT nullif($9::int, 0)`,
		f.Restrict, f.Projects, f.ProjectID, f.Actor, f.Action, since, until, f.BeforeID, f.Limit)
	if err != nil {
		return fmt.Errorf("query audit rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r AuditRow
		if err := rows.Scan(&r.ID, &r.At, &r.ActorID, &r.ActorName, &r.Source, &r.Surface, &r.Action,
			&r.ProjectID, &r.SessionID, &r.Target, &r.Detail, &r.PrevHash, &r.Hash); err != nil {
			return fmt.Errorf("scan audit row: %w", err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read audit rows: %w", err)
	}
	return nil
}

// OwnedProjectIDs returns the ids of the projects userID owns.
func (s *Store) OwnedProjectIDs(ctx context.Context, userID int64) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT project_id FROM project_members WHERE user_id = $1 AND role = 'owner' ORDER BY project_id`, userID)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("projects owned by user %d: %w", userID, err)
	}
	return ids, nil
}
