package store

import (
	"context"
	"fmt"
)

// PendingAttachmentBytes is the size of the user's uploads waiting to be
// sent, in every session. It first drops the user's pending uploads older
// than a day in any session (AddAttachment drops them only in the session
// it adds to), so an abandoned session's uploads stop counting.
func (s *Store) PendingAttachmentBytes(ctx context.Context, userID int64) (int64, error) {
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM attachments WHERE user_id = $1 AND sent_at IS NULL
		AND created_at < now() - interval '1 day'`, userID); err != nil {
		return 0, fmt.Errorf("drop stale attachments: %w", err)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, `
		SELECT coalesce(sum(size), 0) FROM attachments WHERE user_id = $1 AND sent_at IS NULL`,
		userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("sum pending attachments: %w", err)
	}
	return n, nil
}
