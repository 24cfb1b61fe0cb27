package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tables of reach (issue 30): Web Push keys and devices, each
// person's and each project's rules, who is looking, the stages of an
// ask's reach, deliveries and answer tokens. Package reach decides; this
// file only reads and writes.

// LookingFor is how long a page's visibility report counts: the page
// repeats it every 20 s while it is visible.
const LookingFor = 45 * time.Second

// ReachKeys returns the installation's VAPID key pair, storing the one
// gen makes if there is none yet (the first replica to store one wins).
func (s *Store) ReachKeys(ctx context.Context, gen func() (public, private string, err error)) (string, string, error) {
	var pub, priv string
	err := s.pool.QueryRow(ctx, `SELECT vapid_public, vapid_private FROM reach_keys`).Scan(&pub, &priv)
	if err == nil {
		return pub, priv, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", "", fmt.Errorf("push keys: %w", err)
	}
	if pub, priv, err = gen(); err != nil {
		return "", "", fmt.Errorf("push keys: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO reach_keys (vapid_public, vapid_private) VALUES ($1, $2)
		ON CONFLICT (id) DO NOTHING`, pub, priv); err != nil {
		return "", "", fmt.Errorf("push keys: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT vapid_public, vapid_private FROM reach_keys`).Scan(&pub, &priv)
	if err != nil {
		return "", "", fmt.Errorf("push keys: %w", err)
	}
	return pub, priv, nil
}

// PushDevice is one browser's push subscription.
type PushDevice struct {
	ID          int64      `db:"id"`
	UserID      int64      `db:"user_id"`
	Endpoint    string     `db:"endpoint"`
	P256dh      string     `db:"p256dh"`
	Auth        string     `db:"auth"`
	Name        string     `db:"name"`
	CreatedAt   time.Time  `db:"created_at"`
	LastUsedAt  *time.Time `db:"last_used_at"`
	LastOutcome string     `db:"last_outcome"`
}

const pushDeviceColumns = `id, user_id, endpoint, p256dh, auth, name, created_at, last_used_at, last_outcome`

// ErrEndpointTaken refuses a push endpoint that is another person's
// device, given with other keys than that device's.
var ErrEndpointTaken = errors.New("the push endpoint is another person's device")

// AddPushDevice stores d for d.UserID. The same endpoint again takes the
// new name and person, and the new keys if it was the person's own: a
// browser that subscribed anew keeps its endpoint only with its keys, so
// another person signed in on it gives the same keys, while someone who
// only knows the endpoint URL of another's device gets ErrEndpointTaken
// (else they could silence that device and have their asks sent to it).
func (s *Store) AddPushDevice(ctx context.Context, d PushDevice) (PushDevice, error) {
	rows, _ := s.pool.Query(ctx, `INSERT INTO push_devices (user_id, endpoint, p256dh, auth, name)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (endpoint) DO UPDATE SET user_id = $1, p256dh = $3, auth = $4, name = $5
		WHERE push_devices.user_id = $1 OR (push_devices.p256dh = $3 AND push_devices.auth = $4)
		RETURNING `+pushDeviceColumns, d.UserID, d.Endpoint, d.P256dh, d.Auth, d.Name)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[PushDevice])
	if errors.Is(err, pgx.ErrNoRows) {
		return PushDevice{}, fmt.Errorf("add push device: %w", ErrEndpointTaken)
	}
	if err != nil {
		return PushDevice{}, fmt.Errorf("add push device: %w", err)
	}
	return out, nil
}

// PushDevices lists userIDs' devices, oldest first.
func (s *Store) PushDevices(ctx context.Context, userIDs ...int64) ([]PushDevice, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+pushDeviceColumns+` FROM push_devices
		WHERE user_id = ANY($1) ORDER BY created_at, id`, userIDs)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[PushDevice])
	if err != nil {
		return nil, fmt.Errorf("push devices: %w", err)
	}
	return list, nil
}

// PushDeviceOf returns the device id if it is userID's, or ErrNotFound.
func (s *Store) PushDeviceOf(ctx context.Context, userID, id int64) (PushDevice, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+pushDeviceColumns+` FROM push_devices WHERE id = $1 AND user_id = $2`, id, userID)
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[PushDevice])
	if err != nil {
		return d, fmt.Errorf("push device %d: %w", id, notFound(err))
	}
	return d, nil
}

// DeletePushDevice removes userID's device id; ErrNotFound if there is
// none. userID 0 removes it whoever's it is (the push service said gone).
func (s *Store) DeletePushDevice(ctx context.Context, userID, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM push_devices WHERE id = $1 AND ($2 = 0 OR user_id = $2)`, id, userID)
	if err != nil {
		return fmt.Errorf("remove push device %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("remove push device %d: %w", id, ErrNotFound)
	}
	return nil
}

// MarkPushDevice records the outcome of the device's last push.
func (s *Store) MarkPushDevice(ctx context.Context, id int64, outcome string) error {
	_, err := s.pool.Exec(ctx, `UPDATE push_devices SET last_used_at = now(), last_outcome = $2 WHERE id = $1`, id, outcome)
	if err != nil {
		return fmt.Errorf("mark push device %d: %w", id, err)
	}
	return nil
}

// UserReach is a person's own rules.
type UserReach struct {
	QuietFrom string `db:"quiet_from"` // "HH:MM" local; equal to QuietTo = no quiet hours
	QuietTo   string `db:"quiet_to"`
	TZ        string `db:"tz"`
	EmailAsks bool   `db:"email_asks"`
}

// UserReachOf returns userID's rules (the defaults if never set).
func (s *Store) UserReachOf(ctx context.Context, userID int64) (UserReach, error) {
	rows, _ := s.pool.Query(ctx, `SELECT quiet_from, quiet_to, tz, email_asks FROM user_reach WHERE user_id = $1`, userID)
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[UserReach])
	if errors.Is(err, pgx.ErrNoRows) {
		return UserReach{TZ: "UTC"}, nil
	}
	if err != nil {
		return u, fmt.Errorf("notification settings of user %d: %w", userID, err)
	}
	return u, nil
}

// SetUserReach stores userID's rules.
func (s *Store) SetUserReach(ctx context.Context, userID int64, u UserReach) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO user_reach (user_id, quiet_from, quiet_to, tz, email_asks)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (user_id) DO UPDATE SET quiet_from = $2, quiet_to = $3, tz = $4, email_asks = $5`,
		userID, u.QuietFrom, u.QuietTo, u.TZ, u.EmailAsks)
	if err != nil {
		return fmt.Errorf("notification settings of user %d: %w", userID, err)
	}
	return nil
}

// ProjectReach is a project's routing, escalation and chat connections.
type ProjectReach struct {
	// FirstReach is who is reached first: "starter" (the member whose
	// message started the turn), "all" members, or "named" people.
	FirstReach string  `db:"first_reach"`
	Named      []int64 `db:"named"`
	// EscalateAfter is how long after the ask opened the rest of the
	// members are reached if nobody answered (seconds; 0 = never).
	EscalateAfter int    `db:"escalate_after"`
	SlackToken    string `db:"slack_token"`
	SlackSecret   string `db:"slack_secret"`
	SlackChannel  string `db:"slack_channel"`
	WebhookURL    string `db:"webhook_url"`
	WebhookSecret string `db:"webhook_secret"`
}

// DefaultProjectReach is a project's reach until its owners change it.
var DefaultProjectReach = ProjectReach{FirstReach: "starter", Named: []int64{}, EscalateAfter: 120}

// ProjectReachOf returns the project's reach settings.
func (s *Store) ProjectReachOf(ctx context.Context, projectID int64) (ProjectReach, error) {
	rows, _ := s.pool.Query(ctx, `SELECT first_reach, named, escalate_after, slack_token, slack_secret,
		slack_channel, webhook_url, webhook_secret FROM project_reach WHERE project_id = $1`, projectID)
	p, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ProjectReach])
	if errors.Is(err, pgx.ErrNoRows) {
		return DefaultProjectReach, nil
	}
	if err != nil {
		return p, fmt.Errorf("reach settings of project %d: %w", projectID, err)
	}
	return p, nil
}

// SetProjectReach stores the project's reach settings.
func (s *Store) SetProjectReach(ctx context.Context, projectID int64, p ProjectReach) error {
	if p.Named == nil {
		p.Named = []int64{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO project_reach (project_id, first_reach, named, escalate_after,
		slack_token, slack_secret, slack_channel, webhook_url, webhook_secret)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (project_id) DO UPDATE SET first_reach = $2, named = $3, escalate_after = $4,
		slack_token = $5, slack_secret = $6, slack_channel = $7, webhook_url = $8, webhook_secret = $9`,
		projectID, p.FirstReach, p.Named, p.EscalateAfter, p.SlackToken, p.SlackSecret, p.SlackChannel, p.WebhookURL, p.WebhookSecret)
	if err != nil {
		return fmt.Errorf("reach settings of project %d: %w", projectID, err)
	}
	return nil
}

// Look records that a page (conn) of userID shows the session (or, with
// sessionID "", the inbox of projectID) visibly, or no longer does.
func (s *Store) Look(ctx context.Context, conn string, userID, projectID int64, sessionID string, visible bool) error {
	var err error
	if visible {
		var sid *string
		if sessionID != "" {
			sid = &sessionID
		}
		_, err = s.pool.Exec(ctx, `INSERT INTO reach_looking (conn_id, user_id, project_id, session_id)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (conn_id) DO UPDATE SET seen_at = now(), user_id = $2, project_id = $3, session_id = $4`,
			conn, userID, projectID, sid)
	} else {
		_, err = s.pool.Exec(ctx, `DELETE FROM reach_looking WHERE conn_id = $1`, conn)
	}
	if err != nil {
		return fmt.Errorf("visibility report: %w", err)
	}
	return nil
}

// LookingAt returns which of userIDs have a visible page, reported within
// LookingFor, that shows the session or the inbox of its project.
func (s *Store) LookingAt(ctx context.Context, projectID int64, sessionID string, userIDs []int64) ([]int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT DISTINCT user_id FROM reach_looking
		WHERE project_id = $1 AND (session_id IS NULL OR session_id = $2) AND user_id = ANY($3)
		AND seen_at > now() - make_interval(secs => $4)`, projectID, sessionID, userIDs, LookingFor.Seconds())
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("who is looking: %w", err)
	}
	return ids, nil
}

// ClaimReachStage claims stage of the ask's reach for this replica: true
// the first time anyone claims it.
func (s *Store) ClaimReachStage(ctx context.Context, inputID string, stage int) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO reach_stages (input_id, stage) VALUES ($1, $2)
		ON CONFLICT DO NOTHING`, inputID, stage)
	if err != nil {
		return false, fmt.Errorf("claim stage %d of ask %s: %w", stage, inputID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReachAsk is an ask as reach works on it.
type ReachAsk struct {
	ID        string          `db:"id"`
	SessionID string          `db:"session_id"`
	ProjectID int64           `db:"project_id"`
	Kind      string          `db:"kind"`
	Payload   json.RawMessage `db:"payload"`
	Status    string          `db:"status"`
	CreatedAt time.Time       `db:"created_at"`
	Stages    []int16         `db:"stages"`
}

const reachAskColumns = `i.id, i.session_id, s.project_id, i.kind, i.payload, i.status, i.created_at,
	coalesce((SELECT array_agg(stage ORDER BY stage) FROM reach_stages r WHERE r.input_id = i.id), '{}') AS stages`

// ReachAsks lists the asks reach still has work on: pending asks of the
// last day whose last stage (last) is not done, and closed ones with
// deliveries to take back (no stage closed yet).
func (s *Store) ReachAsks(ctx context.Context, last, closed int) ([]ReachAsk, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+reachAskColumns+`
		FROM inputs i JOIN sessions s ON s.id = i.session_id
		WHERE (i.status = 'pending' AND i.created_at > now() - interval '1 day'
		       AND NOT EXISTS (SELECT 1 FROM reach_stages r WHERE r.input_id = i.id AND r.stage = $2))
		   OR (i.status <> 'pending' AND EXISTS (SELECT 1 FROM reach_deliveries d WHERE d.input_id = i.id AND d.outcome = 'sent')
		       AND NOT EXISTS (SELECT 1 FROM reach_stages r WHERE r.input_id = i.id AND r.stage = $1))
		ORDER BY i.created_at`, closed, last)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ReachAsk])
	if err != nil {
		return nil, fmt.Errorf("asks to reach: %w", err)
	}
	return list, nil
}

// TurnStarter returns the id of the member whose message started the
// session's latest turn (0 if none is recorded).
func (s *Store) TurnStarter(ctx context.Context, sessionID string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce((payload->>'by_id')::bigint, 0) FROM events
		WHERE session_id = $1 AND type IN ('prompt', 'turn_resent') ORDER BY seq DESC LIMIT 1`, sessionID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("who started the turn of %s: %w", sessionID, err)
	}
	return id, nil
}

// AskStarter returns the id of the member whose message started the
// turn in which the ask inputID opened (0 if none is recorded): the
// first message written after the last turn ended (a result) before the
// ask, or, if none was, the latest message before it. A message sent
// while a turn runs goes to the CLI at once, which folds it into the
// running turn or runs it next, so the latest message is not always the
// turn's (TurnStarter).
func (s *Store) AskStarter(ctx context.Context, sessionID, inputID string) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `WITH ask AS (
			SELECT coalesce(min(seq), 9223372036854775807) AS seq FROM events
			WHERE session_id = $1 AND type = 'input_requested' AND payload->>'input_id' = $2),
		ended AS (
			SELECT coalesce(max(e.seq), 0) AS seq FROM events e, ask
			WHERE e.session_id = $1 AND e.type = 'result' AND e.seq < ask.seq)
		SELECT coalesce((e.payload->>'by_id')::bigint, 0) FROM events e, ask, ended
		WHERE e.session_id = $1 AND e.type IN ('prompt', 'turn_resent') AND e.seq < ask.seq
		ORDER BY e.seq > ended.seq DESC, CASE WHEN e.seq > ended.seq THEN e.seq ELSE -e.seq END
		LIMIT 1`, sessionID, inputID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("who started the turn of ask %s: %w", inputID, err)
	}
	return id, nil
}

// Delivery is one delivery of an ask and its outcome.
type Delivery struct {
	ID      int64     `db:"id"`
	InputID string    `db:"input_id"`
	UserID  *int64    `db:"user_id"`
	Channel string    `db:"channel"` // push, slack, webhook, email
	Target  string    `db:"target"`  // "Ann's phone", "#ops", an address
	Outcome string    `db:"outcome"` // sent, suppressed, no_device, failed, expired, quiet
	Detail  string    `db:"detail"`
	Ref     string    `db:"ref"` // push: the device id; slack: channel/ts
	At      time.Time `db:"at"`
}

// AddDelivery records d.
func (s *Store) AddDelivery(ctx context.Context, d Delivery) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO reach_deliveries (input_id, user_id, channel, target, outcome, detail, ref)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, d.InputID, d.UserID, d.Channel, d.Target, d.Outcome, d.Detail, d.Ref)
	if err != nil {
		return fmt.Errorf("record delivery of ask %s: %w", d.InputID, err)
	}
	return nil
}

// Deliveries lists the deliveries of the asks inputIDs, oldest first.
func (s *Store) Deliveries(ctx context.Context, inputIDs ...string) ([]Delivery, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, input_id, user_id, channel, target, outcome, detail, ref, at
		FROM reach_deliveries WHERE input_id = ANY($1) ORDER BY at, id`, inputIDs)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Delivery])
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	return list, nil
}

// AddAnswerToken stores the hash of a single-use answer token of userID
// for the ask; via names where it was sent ("Ann's phone").
func (s *Store) AddAnswerToken(ctx context.Context, hash []byte, inputID string, userID int64, via string, expires time.Time) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO answer_tokens (hash, input_id, user_id, via, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, hash, inputID, userID, via, expires)
	if err != nil {
		return fmt.Errorf("answer token: %w", err)
	}
	return nil
}

// AnswerToken is a used answer token: whose, for which ask, from where.
type AnswerToken struct {
	InputID string
	UserID  int64
	Via     string
}

// UseAnswerToken spends the token whose hash is given, once: ErrNotFound
// if there is none, it was used, or it expired.
func (s *Store) UseAnswerToken(ctx context.Context, hash []byte) (AnswerToken, error) {
	var t AnswerToken
	err := s.pool.QueryRow(ctx, `UPDATE answer_tokens SET used_at = now()
		WHERE hash = $1 AND used_at IS NULL AND expires_at > now()
		RETURNING input_id, user_id, via`, hash).Scan(&t.InputID, &t.UserID, &t.Via)
	if err != nil {
		return t, fmt.Errorf("answer token: %w", notFound(err))
	}
	return t, nil
}

// PeekAnswerToken reads the token without spending it (the confirm page
// of an e-mail link): ErrNotFound as UseAnswerToken.
func (s *Store) PeekAnswerToken(ctx context.Context, hash []byte) (AnswerToken, error) {
	var t AnswerToken
	err := s.pool.QueryRow(ctx, `SELECT input_id, user_id, via FROM answer_tokens
		WHERE hash = $1 AND used_at IS NULL AND expires_at > now()`, hash).Scan(&t.InputID, &t.UserID, &t.Via)
	if err != nil {
		return t, fmt.Errorf("answer token: %w", notFound(err))
	}
	return t, nil
}

// Deactivated returns which of ids are deactivated accounts.
func (s *Store) Deactivated(ctx context.Context, ids []int64) (map[int64]bool, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id FROM users WHERE id = ANY($1) AND deactivated_at IS NOT NULL`, ids)
	off, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("deactivated accounts: %w", err)
	}
	m := make(map[int64]bool, len(off))
	for _, id := range off {
		m[id] = true
	}
	return m, nil
}

// UserNames returns the display name (the name, else the e-mail) of each
// of ids that exists.
func (s *Store) UserNames(ctx context.Context, ids []int64) (map[int64]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, coalesce(nullif(name, ''), email) FROM users WHERE id = ANY($1)`, ids)
	names := map[int64]string{}
	var id int64
	var name string
	_, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error { names[id] = name; return nil })
	if err != nil {
		return nil, fmt.Errorf("user names: %w", err)
	}
	return names, nil
}
