package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// SnippetStart and SnippetStop mark the matched words in SessionHit.Snippet.
const (
	SnippetStart = "\u27e6"
	SnippetStop  = "\u27e7"
)

// SessionHit is a session in a project's history, with where a search matched.
type SessionHit struct {
	Session
	ArchivedAt *time.Time `db:"archived_at"`
	Snippet    string     `db:"snippet"` // the matching transcript text, marked; "" without a query or a transcript hit
}

// SearchSessions lists a project's sessions, most recently updated first.
// A non-empty query keeps those whose title or transcript (prompts and
// Claude's text) matches it as a web-search style full-text query, or whose
// title contains it. Archived sessions are left out unless withArchived.
func (s *Store) SearchSessions(ctx context.Context, projectID int64, query string, withArchived bool, limit int) ([]SessionHit, error) {
	query = strings.TrimSpace(query)
	rows, _ := s.pool.Query(ctx, `
		WITH q AS (SELECT websearch_to_tsquery('english', $2) AS q)
		SELECT `+prefixed("s.", sessionColumns)+`, s.archived_at, coalesce(h.snippet, '') AS snippet
		FROM sessions s CROSS JOIN q
		LEFT JOIN LATERAL (
			SELECT ts_headline('english', event_text(e.type, e.payload), q.q,
				'StartSel=`+SnippetStart+`, StopSel=`+SnippetStop+`, MaxWords=24, MinWords=8, MaxFragments=1') AS snippet
			FROM events e
			WHERE $2 <> '' AND e.session_id = s.id AND e.type IN ('prompt', 'assistant') AND e.search @@ q.q
			ORDER BY e.seq
			LIMIT 1
		) h ON true
		WHERE s.project_id = $1
		  AND ($3 OR s.archived_at IS NULL)
		  AND ($2 = '' OR h.snippet IS NOT NULL
		       OR to_tsvector('english', s.title) @@ q.q
		       OR strpos(lower(s.title), lower($2)) > 0)
		ORDER BY s.updated_at DESC, s.created_at DESC
		LIMIT $4`, projectID, query, withArchived, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[SessionHit])
	if err != nil {
		return nil, fmt.Errorf("search sessions of project %d for %q: %w", projectID, query, err)
	}
	return list, nil
}

// RenameSession sets a session's title.
func (s *Store) RenameSession(ctx context.Context, id, title string) error {
	return s.updateSession(ctx, "rename", id,
		`UPDATE sessions SET title = $2, updated_at = now() WHERE id = $1`, title)
}

// ArchiveSession archives a session (or restores it when archived is false).
// It keeps updated_at: archiving is not activity.
func (s *Store) ArchiveSession(ctx context.Context, id string, archived bool) error {
	return s.updateSession(ctx, "archive", id, `
		UPDATE sessions SET archived_at = CASE WHEN $2 THEN coalesce(archived_at, now()) END
		WHERE id = $1`, archived)
}

// SessionArchived reports whether a session is archived.
func (s *Store) SessionArchived(ctx context.Context, id string) (bool, error) {
	var archived bool
	err := s.pool.QueryRow(ctx, `SELECT archived_at IS NOT NULL FROM sessions WHERE id = $1`, id).Scan(&archived)
	if err != nil {
		return false, fmt.Errorf("session %s archived: %w", id, notFound(err))
	}
	return archived, nil
}

// LastPrompt returns the text of the session's most recent prompt, or ErrNotFound.
func (s *Store) LastPrompt(ctx context.Context, sessionID string) (string, error) {
	var text string
	err := s.pool.QueryRow(ctx, `
		SELECT payload ->> 'text' FROM events
		WHERE session_id = $1 AND type = 'prompt' AND payload ? 'text'
		ORDER BY seq DESC LIMIT 1`, sessionID).Scan(&text)
	if err != nil {
		return "", fmt.Errorf("last prompt of session %s: %w", sessionID, notFound(err))
	}
	return text, nil
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
