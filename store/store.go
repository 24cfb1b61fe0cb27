// Package store holds all of Parley's SQL. Nothing else talks to Postgres.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5:// driver
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"parley/migrations"
)

// ErrNotFound is returned when a row asked for by id does not exist.
var ErrNotFound = errors.New("not found")

// ErrNotPending is returned by ResolveInput when the input was resolved before.
var ErrNotPending = errors.New("already answered")

// Store is Parley's Postgres store, backed by a pgx connection pool.
type Store struct {
	pool *pgxpool.Pool
	// live is a small pool of its own for the run loops' writes (Live), so
	// they never queue behind page loads and catch-up replays.
	live    *pgxpool.Pool
	url     string
	replica string // this process's replica id (see Replica)
	// takeOvers counts the TakeOver calls that took replicas over.
	takeOvers atomic.Int64
	// lockSlots bounds the main pool's connections that hold worktree
	// locks (worktree_lock.go).
	lockSlots chan struct{}
	// auditAppended is told of each audit row this Store commits
	// (OnAuditAppend, audit_witness.go).
	auditAppended atomic.Pointer[func(AuditRow)]
}

// Migrate applies every pending migration in migrations.FS to the database at databaseURL.
// A database that is already up to date is not an error.
func Migrate(databaseURL string) error {
	u, err := url.Parse(databaseURL)
	if err != nil {
		return fmt.Errorf("migrate: parse database url: %w", err)
	}
	// pool_* parameters configure pgxpool; golang-migrate would send them
	// to the server as settings, which it refuses.
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	// golang-migrate picks its driver by URL scheme; its pgx/v5 driver registers "pgx5"
	// and turns the scheme back into "postgres" before connecting.
	switch u.Scheme {
	case "postgres", "postgresql", "pgx5":
		u.Scheme = "pgx5"
	default:
		return fmt.Errorf("migrate: database url must start with postgres://, got %q", u.Scheme)
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("migrate: open embedded migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, u.String())
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	upErr := m.Up()
	srcErr, dbErr := m.Close()
	if upErr != nil && !errors.Is(upErr, migrate.ErrNoChange) {
		return fmt.Errorf("migrate: up: %w", upErr)
	}
	if err := errors.Join(srcErr, dbErr); err != nil {
		return fmt.Errorf("migrate: close: %w", err)
	}
	return nil
}

// Open connects two pools to databaseURL and checks that the database
// answers: the main pool (pool_max_conns in the URL, else 16) and a small
// one for the run loops' writes (see Live).
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// pgxpool's default, max(4, cores), queues the event writes of many
	// concurrent runs behind each other; pool_max_conns in the URL wins.
	if !strings.Contains(databaseURL, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	// The replica id names every connection, so the log's NOTIFY says which
	// replica wrote the events (for the logs; a replica knows its own runs).
	replica := "r" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	cfg.ConnConfig.RuntimeParams["application_name"] = "parley " + replica
	liveCfg := cfg.Copy()
	liveCfg.MaxConns = max(4, cfg.MaxConns/4)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	live, err := pgxpool.NewWithConfig(ctx, liveCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		live.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return &Store{pool: pool, live: live, url: databaseURL, replica: replica, lockSlots: make(chan struct{}, cfg.MaxConns/2)}, nil
}

// Live returns the store seen through the run loops' own small pool: the
// writes of live runs go there, so a storm of page loads and replays on
// the main pool cannot delay them.
func (s *Store) Live() *Store {
	return &Store{pool: s.live, live: s.live, url: s.url, replica: s.replica, lockSlots: s.lockSlots}
}

// Replica is this process's id among the replicas sharing the database:
// new for every Open, and the application_name of its connections.
func (s *Store) Replica() string { return s.replica }

// URL is the database URL the store was opened with (for LISTEN).
func (s *Store) URL() string { return s.url }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Close closes every connection of both pools, waiting for connections in use to be released.
func (s *Store) Close() {
	s.pool.Close()
	if s.live != s.pool {
		s.live.Close()
	}
}

// notFound maps pgx.ErrNoRows to ErrNotFound and leaves other errors alone.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// collectSet collects rows of one text column into a set.
func collectSet(rows pgx.Rows) (map[string]bool, error) {
	list, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(list))
	for _, v := range list {
		set[v] = true
	}
	return set, nil
}

// Project is a workspace that sessions run in, with the Claude options its
// runs get (see ProjectSettings).
type Project struct {
	ID        int64  `db:"id"`
	Name      string `db:"name"`
	Workspace string `db:"workspace"` // "" = the managed directory named by ID
	ProjectSettings
	ArchivedAt *time.Time `db:"archived_at"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
}

const projectColumns = `id, name, workspace, model, permission_mode, allowed_tools, disallowed_tools,
	append_system_prompt, max_turns, ask_user_enabled, ask_timeout_seconds, permission_timeout_seconds, instructions,
	archived_at, created_at, updated_at`

// EnsureDefaultProject returns the lowest-id project, creating one with name and workspace if
// there is none.
func (s *Store) EnsureDefaultProject(ctx context.Context, name, workspace string) (Project, error) {
	// A transaction-scoped advisory lock makes two servers starting at once create one project,
	// not two.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return Project{}, fmt.Errorf("ensure default project: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parley.default_project'))`); err != nil {
		return Project{}, fmt.Errorf("ensure default project: lock: %w", err)
	}
	rows, _ := tx.Query(ctx, `SELECT `+projectColumns+` FROM projects ORDER BY id LIMIT 1`)
	p, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Project])
	if errors.Is(err, pgx.ErrNoRows) {
		rows, _ = tx.Query(ctx, `INSERT INTO projects (name, workspace) VALUES ($1, $2) RETURNING `+projectColumns,
			name, workspace)
		p, err = pgx.CollectOneRow(rows, pgx.RowToStructByName[Project])
	}
	if err != nil {
		return Project{}, fmt.Errorf("ensure default project: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Project{}, fmt.Errorf("ensure default project: commit: %w", err)
	}
	return p, nil
}

// GetProject returns the project with id, or ErrNotFound.
func (s *Store) GetProject(ctx context.Context, id int64) (Project, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+projectColumns+` FROM projects WHERE id = $1`, id)
	p, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[Project])
	if err != nil {
		return Project{}, fmt.Errorf("get project %d: %w", id, notFound(err))
	}
	return p, nil
}

// Ready reports whether the database answers and its schema is at the
// newest migration this build embeds, not half-applied.
func (s *Store) Ready(ctx context.Context) error {
	var version int64
	var dirty bool
	if err := s.pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	want, err := newestMigration()
	if err != nil {
		return err
	}
	switch {
	case dirty:
		return fmt.Errorf("migration %d failed half-way", version)
	case version < want:
		return fmt.Errorf("schema at migration %d, this build needs %d", version, want)
	}
	return nil
}

// newestMigration is the highest version among the embedded migrations.
func newestMigration() (int64, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return 0, fmt.Errorf("read embedded migrations: %w", err)
	}
	var newest int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if n, err := strconv.ParseInt(num, 10, 64); ok && err == nil && n > newest {
			newest = n
		}
	}
	return newest, nil
}
