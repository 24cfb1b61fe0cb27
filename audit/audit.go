// Package audit is Parley's audit trail: one append-only log of who did
// what, from where. Each row carries a SHA-256 hash chaining it to the row
// before, so a row edited or removed in the database breaks the chain, and
// Verify names the first broken link.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"parley/store"
)

// Surfaces: where an action came from.
const (
	Page     = "page"
	Inbox    = "inbox"
	Push     = "push"
	Slack    = "slack"
	Email    = "email"
	Terminal = "terminal"
	MCP      = "mcp"
	CLI      = "cli"
	System   = "system"
)

// Actions recorded.
const (
	SignIn          = "sign_in"
	SignInFailed    = "sign_in_failed"
	Invite          = "invite"
	MemberAdd       = "member_add"
	RoleChange      = "role_change"
	MemberRemove    = "member_remove"
	AdminChange     = "admin_change"
	Deactivate      = "deactivate"
	ProjectSettings = "project_settings"
	ProjectDelete   = "project_delete"
	TokenCreate     = "token_create"
	TokenRevoke     = "token_revoke"
	AskAnswer       = "ask_answer"
	AllowAlways     = "allow_always"
	WorktreeMerge   = "worktree_merge"
	WorktreeDiscard = "worktree_discard"
	SessionArchive  = "session_archive"
	SessionDelete   = "session_delete"
	UserAdd         = "user_add"
	UserRemove      = "user_remove"
	PasswordSet     = "password_set"
)

// Entry is one thing someone did, as a caller records it.
type Entry struct {
	ActorID   int64  // 0 = no account (a failed sign-in, the system)
	ActorName string // the name shown, or the email tried
	From      string // the client address
	Surface   string
	Action    string
	ProjectID int64
	SessionID string
	Target    string         // what the action was done to: an email, a token's name, an ask's id
	Detail    map[string]any // more, as JSON
}

// Row is a recorded entry with its place in the chain.
type Row = store.AuditRow

// Filter selects rows (store.AuditFilter).
type Filter = store.AuditFilter

// Log records, lists, exports and verifies the audit trail.
type Log struct {
	st  *store.Store
	now func() time.Time
}

// New returns the audit trail kept in st.
func New(st *store.Store) *Log { return &Log{st: st, now: time.Now} }

// Record appends e to the trail. The caller decides what a failure means;
// Parley's handlers log it and go on, so an audit write never blocks the
// action it records.
func (l *Log) Record(ctx context.Context, e Entry) error {
	if e.Action == "" || e.Surface == "" {
		return fmt.Errorf("audit entry without an action or a surface: %q %q", e.Action, e.Surface)
	}
	detail, err := canonicalDetail(e.Detail)
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	row := Row{At: l.now().UTC().Truncate(time.Microsecond), ActorID: e.ActorID, ActorName: clean(e.ActorName),
		Source: clean(e.From), Surface: clean(e.Surface), Action: clean(e.Action), ProjectID: e.ProjectID,
		SessionID: clean(e.SessionID), Target: clean(e.Target), Detail: detail}
	if _, err := l.st.AppendAudit(ctx, row, Seal); err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// List returns the rows f selects, newest first, at most f.Limit (200
// when unset).
func (l *Log) List(ctx context.Context, f Filter) ([]Row, error) {
	f.Newest = true
	if f.Limit <= 0 {
		f.Limit = 200
	}
	var out []Row
	err := l.st.EachAuditRow(ctx, f, func(r Row) error { out = append(out, r); return nil })
	return out, err
}

// Scope is the filter of what a viewer may see: an admin every row, anyone
// else the rows of the projects they own (none when they own none, which
// the caller refuses before listing).
func (l *Log) Scope(ctx context.Context, userID int64, admin bool) (Filter, error) {
	if admin {
		return Filter{}, nil
	}
	ids, err := l.st.OwnedProjectIDs(ctx, userID)
	if err != nil {
		return Filter{}, err
	}
	return Filter{Restrict: true, Projects: append([]int64{}, ids...)}, nil
}

// clean makes s storable as Postgres text: valid UTF-8 without NUL.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// canonicalDetail is d as the JSON the chain hashes: what Postgres gives
// back from jsonb, decoded and encoded again, is the same bytes (keys
// sorted, numbers as float64, Go's escaping).
func canonicalDetail(d map[string]any) ([]byte, error) {
	if d == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode detail: %w", err)
	}
	return recode(b)
}

// recode decodes and encodes a JSON text again, so equal values have
// equal bytes whatever spacing and key order they came with.
func recode(b []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode detail: %w", err)
	}
	return json.Marshal(cleanValue(v))
}

// cleanValue cleans every string in v (jsonb refuses \u0000).
func cleanValue(v any) any {
	switch x := v.(type) {
	case string:
		return clean(x)
	case []any:
		for i := range x {
			x[i] = cleanValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[clean(k)] = cleanValue(e)
		}
		return out
	}
	return v
}
