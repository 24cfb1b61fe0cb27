package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Attachment is an image or file a member attached to a prompt (package
// attach). Data is its content; nil once a file was saved into the
// project's files (Path) or when it was not asked for.
type Attachment struct {
	ID        string `db:"id"`
	SessionID string `db:"session_id"`
	UserID    int64  `db:"user_id"`
	Kind      string `db:"kind"` // "image" or "file"
	MediaType string `db:"media_type"`
	Name      string `db:"name"`
	Size      int64  `db:"size"`
	Data      []byte `db:"data"`
	Path      string `db:"path"`
	Sent      bool   `db:"sent"`
}

const attachmentCols = `id, session_id, user_id, kind, media_type, name, size, data, path, sent_at IS NOT NULL AS sent`

// AddAttachment keeps an upload, pending until its message is sent. It
// first drops the user's pending uploads of the session older than a day
// (a page closed before Send), then refuses with ok false when the user
// already has maxPending pending in the session.
func (s *Store) AddAttachment(ctx context.Context, a Attachment, maxPending int) (ok bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("add attachment: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `
		DELETE FROM attachments WHERE session_id = $1 AND user_id = $2 AND sent_at IS NULL
		AND created_at < now() - interval '1 day'`, a.SessionID, a.UserID); err != nil {
		return false, fmt.Errorf("drop stale attachments: %w", err)
	}
	var n int
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FROM attachments WHERE session_id = $1 AND user_id = $2 AND sent_at IS NULL`,
		a.SessionID, a.UserID).Scan(&n); err != nil {
		return false, fmt.Errorf("count attachments: %w", err)
	}
	if n >= maxPending {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO attachments (id, session_id, user_id, kind, media_type, name, size, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		a.ID, a.SessionID, a.UserID, a.Kind, a.MediaType, a.Name, a.Size, a.Data); err != nil {
		return false, fmt.Errorf("insert attachment: %w", err)
	}
	return true, tx.Commit(ctx)
}

// PendingAttachments returns the user's pending uploads of the session
// with these ids, with their content, in the order of ids; ErrNotFound
// when any of them is not one (another session's, someone else's, sent).
func (s *Store) PendingAttachments(ctx context.Context, sessionID string, userID int64, ids []string) ([]Attachment, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+attachmentCols+` FROM attachments
		WHERE session_id = $1 AND user_id = $2 AND sent_at IS NULL AND id = ANY($3)`, sessionID, userID, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Attachment])
	if err != nil {
		return nil, fmt.Errorf("pending attachments: %w", err)
	}
	byID := make(map[string]Attachment, len(list))
	for _, a := range list {
		byID[a.ID] = a
	}
	out := make([]Attachment, 0, len(ids))
	for _, id := range ids {
		a, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("attachment %q: %w", id, ErrNotFound)
		}
		out = append(out, a)
	}
	return out, nil
}

// AttachmentsSent marks the attachments sent; a file's content is dropped
// and its saved path kept (paths: id → path).
func (s *Store) AttachmentsSent(ctx context.Context, ids []string, paths map[string]string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark attachments sent: %w", err)
	}
	defer tx.Rollback(ctx)
	for _, id := range ids {
		if _, err := tx.Exec(ctx, `
			UPDATE attachments SET sent_at = now(), path = $2,
				data = CASE WHEN kind = 'file' THEN NULL ELSE data END
			WHERE id = $1`, id, paths[id]); err != nil {
			return fmt.Errorf("mark attachment %s sent: %w", id, err)
		}
	}
	return tx.Commit(ctx)
}

// GetAttachment returns the attachment with its content, or ErrNotFound.
func (s *Store) GetAttachment(ctx context.Context, id string) (Attachment, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+attachmentCols+` FROM attachments WHERE id = $1`, id)
	a, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Attachment])
	if err != nil {
		return Attachment{}, fmt.Errorf("attachment %s: %w", id, notFound(err))
	}
	return a, nil
}

// DropPendingAttachment deletes the user's upload id if it is still
// pending; anything else (sent, someone else's, gone) is left as it is.
func (s *Store) DropPendingAttachment(ctx context.Context, id string, userID int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM attachments WHERE id = $1 AND user_id = $2 AND sent_at IS NULL`, id, userID); err != nil {
		return fmt.Errorf("drop attachment %s: %w", id, err)
	}
	return nil
}
