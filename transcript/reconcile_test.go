package transcript

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"parley/runner"
	"parley/store"
	"parley/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The fixture is a real transcript of claude 2.1.328 (one turn: "Let me
// look." + Bash echo hi, its result, then the final reply), with the large
// prompt snapshots left out.
const (
	fixtureSession = "b0b256cb-5bb7-4abd-abd4-811eb77fd922"
	finalText      = "All done here, a long reply in chunks."
)

type published struct {
	mu  sync.Mutex
	evs []runner.Event
}

func (p *published) Publish(e runner.Event) { p.mu.Lock(); p.evs = append(p.evs, e); p.mu.Unlock() }

// setup makes a session whose CLI transcript is the fixture, in a config
// dir laid out as the CLI lays it out.
func setup(t *testing.T) (*store.Store, store.Session, string) {
	t.Helper()
	st, err := store.Open(t.Context(), pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p, err := st.CreateProject(t.Context(), "p", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(t.Context(), p.ID, "t", "x")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "claude")
	dir := filepath.Join(cfg, "projects", "-some-workspace")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fixtureSession+".jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return st, s, cfg
}

// fixtureLines are the fixture's assistant and tool-result lines, in order.
func fixtureLines(t *testing.T) []entry {
	t.Helper()
	f, err := os.Open("testdata/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	es, err := parse(f, slog.New(slog.DiscardHandler))
	if err != nil || len(es) != 4 {
		t.Fatalf("fixture: %d entries, %v; want 4", len(es), err)
	}
	return es
}

// appendLog writes events as a run's loop would, numbering them.
func appendLog(t *testing.T, st *store.Store, sessionID string, evs ...store.Event) {
	t.Helper()
	last, err := st.LastSeq(t.Context(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].SessionID, evs[i].Seq = sessionID, last+int64(i)+1
	}
	if err := st.AppendEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
}

// stdout is the CLI's stdout event of a transcript line.
func stdout(e entry) store.Event {
	return store.Event{Type: e.Type, Payload: mustJSON(map[string]any{"type": e.Type, "message": e.Message,
		"parent_tool_use_id": nil, "session_id": fixtureSession, "uuid": e.UUID})}
}

func streamEvent(ev map[string]any) store.Event {
	return store.Event{Type: "stream_event", Payload: mustJSON(map[string]any{"type": "stream_event", "event": ev, "parent_tool_use_id": nil})}
}

func logOf(t *testing.T, st *store.Store, id string) []store.Event {
	t.Helper()
	evs, err := st.EventsAfter(t.Context(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestReconcileAfterCrash: the log holds the run's start and the first
// message; the final message was streaming when Parley died. Reconcile
// adds the tool call, its result and the final message in order, marked
// recovered, closes the run, and a second call adds nothing.
func TestReconcileAfterCrash(t *testing.T) {
	st, s, cfg := setup(t)
	lines := fixtureLines(t)
	appendLog(t, st, s.ID, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)},
		store.Event{Type: "prompt", Payload: []byte(`{"text":"go"}`)}, stdout(lines[0]),
		streamEvent(map[string]any{"type": "message_start", "message": map[string]any{"id": msgID(t, lines[3])}}),
		streamEvent(map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": "All done"}}))
	before := len(logOf(t, st, s.ID))
	pub := &published{}
	rec := New(st, pub, slog.New(slog.DiscardHandler))
	sess := Session{ID: s.ID, ProjectID: s.ProjectID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"}
	n, err := rec.Reconcile(t.Context(), sess)
	if err != nil {
		t.Fatal(err)
	}
	got := logOf(t, st, s.ID)[before:]
	if n != len(got) || len(pub.evs) != n {
		t.Fatalf("returned %d, appended %d, published %d", n, len(got), len(pub.evs))
	}
	var types []string
	for _, e := range got {
		types = append(types, e.Type)
	}
	want := []string{"notice", "assistant", "user", "assistant", "run_ended"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("appended %v, want %v", types, want)
	}
	for i, e := range got[1:4] {
		var p struct {
			UUID      string `json:"uuid"`
			Recovered bool   `json:"parley_recovered"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		if p.UUID != lines[i+1].UUID || !p.Recovered {
			t.Errorf("event %d: uuid %s recovered %v, want %s, true", e.Seq, p.UUID, p.Recovered, lines[i+1].UUID)
		}
	}
	if !bytes.Contains(got[3].Payload, []byte(finalText)) || !bytes.Contains(got[0].Payload, []byte(RecoveredNotice)) {
		t.Errorf("final %s / notice %s", got[3].Payload, got[0].Payload)
	}
	if !bytes.Contains(compact(got[4].Payload), []byte(`"status":"ended"`)) {
		t.Errorf("run_ended %s, want status ended", got[4].Payload)
	}
	if n, err := rec.Reconcile(t.Context(), sess); n != 0 || err != nil {
		t.Errorf("second reconcile added %d (%v), want nothing", n, err)
	}
}

func msgID(t *testing.T, e entry) string {
	var m message
	if err := json.Unmarshal(e.Message, &m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// TestReconcileCutOff: a reply streaming when Parley died that the
// transcript does not hold is closed with the text streamed so far.
func TestReconcileCutOff(t *testing.T) {
	st, s, cfg := setup(t)
	var evs []store.Event
	evs = append(evs, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)})
	for _, l := range fixtureLines(t) {
		evs = append(evs, stdout(l))
	}
	evs = append(evs, streamEvent(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_cut"}}),
		streamEvent(map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": "half a "}}),
		streamEvent(map[string]any{"type": "content_block_delta", "delta": map[string]any{"type": "text_delta", "text": "sentence"}}))
	appendLog(t, st, s.ID, evs...)
	rec := New(st, &published{}, slog.New(slog.DiscardHandler))
	n, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"})
	if err != nil || n != 2 {
		t.Fatalf("reconcile: %d, %v; want the cut-off reply and the run's end", n, err)
	}
	got := logOf(t, st, s.ID)
	cut := got[len(got)-2]
	c := compact(cut.Payload)
	if cut.Type != "assistant" || !bytes.Contains(c, []byte(`"text":"half a sentence"`)) ||
		!bytes.Contains(c, []byte(`"parley_cut_off":true`)) || !bytes.Contains(c, []byte(`"id":"msg_cut"`)) {
		t.Errorf("cut-off event %s %s", cut.Type, cut.Payload)
	}
}

// TestReconcileHostileTranscript: a transcript that is a symlink (to a file
// outside the config dir), or whose directory is, is not read; malformed
// and over-long lines are skipped. The lost run is closed all the same.
func TestReconcileHostileTranscript(t *testing.T) {
	for _, tc := range []string{"file symlink", "dir symlink"} {
		t.Run(tc, func(t *testing.T) {
			st, s, cfg := setup(t)
			dir := filepath.Join(cfg, "projects", "-some-workspace")
			secret := filepath.Join(t.TempDir(), "outside")
			if err := os.MkdirAll(secret, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, fixtureSession+".jsonl"), filepath.Join(secret, fixtureSession+".jsonl")); err != nil {
				t.Fatal(err)
			}
			if tc == "file symlink" {
				err := os.Symlink(filepath.Join(secret, fixtureSession+".jsonl"), filepath.Join(dir, fixtureSession+".jsonl"))
				if err != nil {
					t.Fatal(err)
				}
			} else if err := os.Symlink(secret, filepath.Join(cfg, "projects", "-elsewhere")); err != nil {
				t.Fatal(err)
			}
			appendLog(t, st, s.ID, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)})
			rec := New(st, &published{}, slog.New(slog.DiscardHandler))
			n, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"})
			got := logOf(t, st, s.ID)
			if err != nil || n != 1 || got[len(got)-1].Type != "run_ended" {
				t.Errorf("reconcile: %d, %v, last %s; want only the run closed", n, err, got[len(got)-1].Type)
			}
		})
	}
}

func TestParseSkipsBadLines(t *testing.T) {
	good := `{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"text","text":"hi"}]}}`
	side := `{"type":"assistant","uuid":"u2","isSidechain":true,"message":{"id":"m2","content":[]}}`
	prompt := `{"type":"user","uuid":"u3","message":{"role":"user","content":"hello"}}`
	long := `{"type":"assistant","uuid":"u4","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxLine) + `"}]}}`
	in := strings.Join([]string{good, "{not json", side, prompt, long, "", good}, "\n")
	var logged bytes.Buffer
	es, err := parse(strings.NewReader(in), slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil || len(es) != 2 || es[0].UUID != "u1" || es[1].UUID != "u1" {
		t.Fatalf("parse: %+v, %v; want the two good lines", es, err)
	}
	if !strings.Contains(logged.String(), "malformed transcript line") || !strings.Contains(logged.String(), "too long") {
		t.Errorf("log %q, want the skipped lines said", logged.String())
	}
}

// compact drops the spaces Postgres's jsonb puts in.
func compact(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}
