package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"strconv"
	"sync"

	"parley/runner"
	"parley/store"
	"parley/streamjson"
)

// Log is the part of the store a Reconciler reads and appends to.
type Log interface {
	// ReconcileEvents returns the session's assistant, user, run_started
	// and run_ended events, and the stream events of its last run.
	ReconcileEvents(ctx context.Context, sessionID string) ([]store.Event, error)
	LastSeq(ctx context.Context, sessionID string) (int64, error)
	AppendEvents(ctx context.Context, evs []store.Event) error
	// AppendEventsKeeping appends evs and keeps it in the queue (released, or
	// this replica's) in one transaction: the prompt that goes on, and the
	// notice saying so.
	AppendEventsKeeping(ctx context.Context, evs []store.Event, it store.QueueItem, released bool) (int64, error)
	// QueueOf returns the session's queue items.
	QueueOf(ctx context.Context, sessionID string) ([]store.QueueItem, error)
}

// Session names a session's log and the CLI's transcript of it.
type Session struct {
	ID              string // Parley's session id
	ProjectID       int64  // for the publisher
	ClaudeSessionID string // the CLI's session id: the transcript's name
	ConfigDir       string // the run's CLAUDE_CONFIG_DIR
	// Status is the session's status once a lost run is closed ("ended",
	// or "waiting" while an ask stays open).
	Status string
	// GoOn asks for the prompt that goes on with what a lost run cut off
	// (Reconciled.GoOn), and has the page say so; unless the session's
	// line already holds one Parley sent (a drain kept it before the
	// process was killed): one is enough.
	GoOn bool
	// Starting says a run of the session is starting now and sends the
	// prompt that goes on first: it is kept in the queue as this replica's, not
	// released for the next pass over the queue.
	Starting bool
	// MayPrompt, if set, says whether a member may still send turns: a
	// barred member's turn neither goes on nor is carried.
	MayPrompt func(ctx context.Context, userID int64) (bool, error)
	// LostRun, if set, is the seq of the lost run's run_started
	// (store.LostRun): when the log's last run is another one (it started
	// since), nothing is done.
	LostRun int64
}

// Reconciled is what Reconcile did.
type Reconciled struct {
	Events int // appended to the log
	// GoOn, when Session.GoOn was set, is the prompt that has Claude go on
	// with the turns the lost run cut off (runner.GoOnAfterCrash), kept in
	// line (GoOn.Item) with the events: released, the next pass over the
	// line sends it; with Session.Starting, the run starting does. nil if
	// there are none.
	GoOn *runner.QueuedWork
}

// Reconciler appends to a session's log what the CLI's transcript holds and
// the log lacks.
type Reconciler struct {
	log Log
	pub runner.Publisher
	l   *slog.Logger
	// One reconcile of a session at a time on this replica: a takeover's
	// recovery and a run's start may reconcile it at once, and each reads
	// the log before it appends what the log lacks. (Across replicas only
	// the session's lease holder writes its log.)
	locks [64]sync.Mutex
}

// lock holds the session's reconcile lock until the returned func.
func (r *Reconciler) lock(sessionID string) func() {
	h := fnv.New32a()
	h.Write([]byte(sessionID))
	m := &r.locks[h.Sum32()%uint32(len(r.locks))]
	m.Lock()
	return m.Unlock
}

// New returns a Reconciler writing to log and showing what it adds through pub.
func New(log Log, pub runner.Publisher, l *slog.Logger) *Reconciler {
	return &Reconciler{log: log, pub: pub, l: l}
}

// RecoveredNotice is what the page says above steps recovered from the transcript.
const RecoveredNotice = "recovered from Claude's transcript after a restart"

// LostRunReason is the reason of a run_ended event the Reconciler writes for a run
// whose process went with Parley. It starts as the reasons of runs Parley
// stopped, so the page shows it as a stop, not a failure.
const LostRunReason = "stopped by Parley (Parley stopped while the run was live)"

// Recover implements runner.Recoverer: it reconciles the session a run is
// about to start for. Nothing of the session runs at that moment, so a run
// the log shows as live was lost; a turn it cut off goes on first, before
// what the run starts for (the replica that took the session over had not
// reconciled it yet, and the team's next message came).
func (r *Reconciler) Recover(ctx context.Context, o runner.Options) (*runner.QueuedWork, error) {
	res, err := r.Reconcile(ctx, Session{ID: o.SessionID, ProjectID: o.ProjectID,
		ClaudeSessionID: o.ClaudeSessionID, ConfigDir: o.ConfigDir, Status: runner.StatusEnded,
		GoOn: true, Starting: true, MayPrompt: o.MayPrompt})
	return res.GoOn, err
}

// Reconcile appends to s's log, in the transcript's order, the assistant
// messages and tool results the log lacks (matched by the line's uuid, a
// tool_use id, or a message id and its text), each marked
// "parley_recovered"; replaces a reply whose stream was cut off and that
// the transcript does not hold by its text so far ("parley_cut_off"); and
// ends a run the log shows as live with a run_ended event. Call it only
// when no process of the session runs. Running it again adds nothing.
//
// With s.GoOn, a lost run whose turns did not all end gets the prompt that
// goes on with them: the log, reconciled, tells which turns the CLI ended,
// which one it began, and whether that one was being stopped or waited for
// an ask; the page says Claude is asked to go on.
func (r *Reconciler) Reconcile(ctx context.Context, s Session) (Reconciled, error) {
	defer r.lock(s.ID)()
	evs, err := r.log.ReconcileEvents(ctx, s.ID)
	if err != nil {
		return Reconciled{}, fmt.Errorf("reconcile %s: %w", s.ID, err)
	}
	st := scan(evs)
	if s.LostRun != 0 && st.runSeq != s.LostRun {
		return Reconciled{}, nil // a run started since, and reconciled the log first
	}
	if st.last, err = r.log.LastSeq(ctx, s.ID); err != nil {
		return Reconciled{}, fmt.Errorf("reconcile %s: %w", s.ID, err)
	}
	var entries []entry
	if s.ClaudeSessionID != "" && s.ConfigDir != "" {
		entries, err = read(s.ConfigDir, s.ClaudeSessionID, r.l.With("session_id", s.ID))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Say so and go on: a run still has to be closed.
			r.l.Warn("read Claude's transcript", "session_id", s.ID, "err", err)
		}
	}
	var add []appended
	missing := st.missing(entries)
	if len(missing) > 0 {
		add = append(add, appended{runner.TypeNotice, mustJSON(map[string]string{"level": "info",
			"text": strconv.Itoa(len(missing)) + " step(s) below were " + RecoveredNotice + "."})})
	}
	for _, e := range missing {
		if id, ok := st.unstreamedText(e); ok {
			// The page shows a reply's text where its stream began; a
			// reply whose stream never reached the log gets its start.
			add = append(add, appended{"stream_event", mustJSON(map[string]any{"type": "stream_event",
				"parent_tool_use_id": nil, "parley_recovered": true, "session_id": s.ClaudeSessionID,
				"event": map[string]any{"type": "message_start", "message": map[string]any{"id": id, "role": "assistant"}}})})
		}
		p := recoveredPayload(e, s.ClaudeSessionID)
		add = append(add, appended{e.Type, p})
		st.note(e)
		st.turns.follow(e.Type, p, true)
	}
	var res Reconciled
	if st.runOpen {
		for _, c := range st.cutOff() {
			add = append(add, appended{"assistant", c})
		}
		if s.GoOn && !r.wentOnBefore(ctx, s.ID) {
			st.turns.stoppedAs(stopReasons(entries))
			turns, begun, stopped := st.turns.cut()
			turns, stopped = r.barOut(ctx, s, turns, begun, stopped)
			if w, ok := runner.GoOnAfterCrash(turns, begun, stopped); ok {
				res.GoOn = &w
				add = append(add, appended{runner.TypeNotice, mustJSON(map[string]string{"level": "warn", "text": runner.CrashNotice})})
			}
		}
		add = append(add, appended{runner.TypeRunEnded, mustJSON(map[string]any{
			"exit_code": -1, "reason": LostRunReason, "status": s.Status, "parley_recovered": true})})
	}
	if len(add) == 0 {
		return res, nil
	}
	out := make([]store.Event, len(add))
	for i, a := range add {
		out[i] = store.Event{SessionID: s.ID, Seq: st.last + int64(i) + 1, Type: a.typ, Payload: a.payload}
	}
	if w := res.GoOn; w != nil {
		w.Item, err = r.log.AppendEventsKeeping(ctx, out, store.QueueItem{SessionID: s.ID, Kind: store.QueuePrompt,
			Text: w.Text, By: w.By, ByID: w.ByID, Parley: w.Parley}, !s.Starting)
	} else {
		err = r.log.AppendEvents(ctx, out)
	}
	if err != nil {
		return Reconciled{}, fmt.Errorf("reconcile %s: %w", s.ID, err)
	}
	for _, e := range out {
		r.pub.Publish(runner.Event{SessionID: e.SessionID, ProjectID: s.ProjectID, Seq: e.Seq, Type: e.Type, Payload: e.Payload})
	}
	r.l.Info("reconciled the session log with Claude's transcript", "session_id", s.ID,
		"recovered", len(missing), "run_closed", st.runOpen, "events", len(out), "goes_on", res.GoOn != nil)
	res.Events = len(out)
	return res, nil
}

// wentOnBefore says whether the session's queue holds a prompt Parley sent:
// a drain that cut the run's turn off, then was killed before it recorded
// the run's end, already kept the prompt that goes on. A line that cannot
// be read now counts as none: a second prompt that goes on is better than
// none.
func (r *Reconciler) wentOnBefore(ctx context.Context, sessionID string) bool {
	line, err := r.log.QueueOf(ctx, sessionID)
	if err != nil {
		r.l.Warn("read the session's line", "session_id", sessionID, "err", err)
		return false
	}
	for _, it := range line {
		if it.Kind == store.QueuePrompt && it.Parley {
			return true
		}
	}
	return false
}

// barOut leaves out the turns of members who may no longer prompt
// (s.MayPrompt): a begun turn of theirs does not go on (stopped), a turn
// the CLI never read is not carried. A member whose right cannot be
// checked now keeps their turn: the runner checks the prompt's author
// again before it sends it.
func (r *Reconciler) barOut(ctx context.Context, s Session, turns []runner.CutTurn, begun, stopped bool) ([]runner.CutTurn, bool) {
	if s.MayPrompt == nil {
		return turns, stopped
	}
	var kept []runner.CutTurn
	for i, t := range turns {
		if t.By.ID != 0 {
			ok, err := s.MayPrompt(ctx, t.By.ID)
			if err != nil {
				r.l.Warn("check that a cut turn's author may still prompt", "session_id", s.ID, "user_id", t.By.ID, "err", err)
			} else if !ok {
				if i == 0 && begun {
					stopped = true // it stays first: the turns after it are the unread ones
				} else {
					continue
				}
			}
		}
		kept = append(kept, t)
	}
	return kept, stopped
}

// stopReasons maps the transcript's assistant messages to their stop_reason.
func stopReasons(entries []entry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		var m streamjson.Message
		if e.Type == "assistant" && json.Unmarshal(e.Message, &m) == nil && m.ID != "" {
			out[m.ID] = m.StopReason
		}
	}
	return out
}

type appended struct {
	typ     string
	payload json.RawMessage
}

// recoveredPayload shapes a transcript line as the CLI's stdout event of it.
func recoveredPayload(e entry, claudeSessionID string) json.RawMessage {
	p := map[string]any{"type": e.Type, "message": e.Message, "parent_tool_use_id": nil,
		"session_id": claudeSessionID, "uuid": e.UUID, "parley_recovered": true}
	if e.Type == "user" && len(e.ToolUseResult) > 0 {
		p["tool_use_result"] = e.ToolUseResult
	}
	return mustJSON(p)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of JSON values are marshalled here
	}
	return b
}
