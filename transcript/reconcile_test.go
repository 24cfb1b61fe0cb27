package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/runner"
	"parley/store"
	"parley/store/pgtest"
	"parley/streamjson"
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
	res, err := rec.Reconcile(t.Context(), sess)
	n := res.Events
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
	if res, err := rec.Reconcile(t.Context(), sess); res.Events != 0 || err != nil {
		t.Errorf("second reconcile added %d (%v), want nothing", res.Events, err)
	}
}

func msgID(t *testing.T, e entry) string {
	var m streamjson.Message
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
	res, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"})
	if n := res.Events; err != nil || n != 2 {
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
			res, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: fixtureSession, ConfigDir: cfg, Status: "ended"})
			n := res.Events
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
	long := `{"type":"assistant","uuid":"u4","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", streamjson.MaxTranscriptLine) + `"}]}}`
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

// TestGoOnAfterLostRun: closing a run a crash cut off, Reconcile tells from
// the log, once reconciled with the transcript, whether the run's turns
// all ended; if not, it gives the prompt that goes on with them
// (runner.GoOnAfterCrash) and the page says so. A turn whose end reached
// only the transcript, or only the stream (no result), ended.
func TestGoOnAfterLostRun(t *testing.T) {
	lines := fixtureLines(t)
	var (
		started   = store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)}
		initEv    = store.Event{Type: "system", Payload: []byte(`{"type":"system","subtype":"init"}`)}
		result    = store.Event{Type: "result", Payload: []byte(`{"type":"result","subtype":"success"}`)}
		goAnn     = store.Event{Type: "prompt", Payload: []byte(`{"text":"go","by":"Ann","by_id":1}`)}
		testBob   = store.Event{Type: "prompt", Payload: []byte(`{"text":"and the tests","by":"Bob","by_id":2,"queued":true}`)}
		stop      = store.Event{Type: "interrupt", Payload: []byte(`{"by":"Ann"}`)}
		stall     = store.Event{Type: "notice", Payload: []byte(`{"level":"warn","stops_turn":true,"text":"stalled"}`)}
		ask       = store.Event{Type: "input_requested", Payload: []byte(`{"input_id":"i1"}`)}
		gave      = store.Event{Type: "input_delivered", Payload: []byte(`{"input_id":"i1"}`)}
		timeout   = store.Event{Type: "input_resolved", Payload: []byte(`{"input_id":"i1","status":"timed_out"}`)}
		withdrawn = store.Event{Type: "input_detached", Payload: mustJSON(map[string]any{"input_ids": []string{"i1"}, "reason": runner.Withdrawn})}
		lost      = store.Event{Type: "input_detached", Payload: mustJSON(map[string]any{"input_ids": []string{"i1"}, "reason": "the Parley replica running this session stopped"})}
		// The fixture's Bash call asks, is answered, and its result
		// reaches the log with no input_delivered (the crash came first).
		askCall  = store.Event{Type: "input_requested", Payload: mustJSON(map[string]any{"input_id": "i2", "tool_use_id": toolUseID(t, lines[1])})}
		answered = store.Event{Type: "input_resolved", Payload: []byte(`{"input_id":"i2","status":"answered"}`)}
		// What the CLI writes for the call it waited on when it is ended.
		aborted = stdout(entry{Type: "user", UUID: "u-aborted", Message: mustJSON(map[string]any{"role": "user", "content": []map[string]any{{
			"type": "tool_result", "is_error": true, "tool_use_id": toolUseID(t, lines[1]),
			"content": "Tool permission request failed: AbortError: Tool permission stream closed before response received"}}})})
		resent  = store.Event{Type: "turn_resent", Payload: []byte(`{"text":"go","by":"Ann","by_id":1}`)}
		stopBob = store.Event{Type: "interrupt", Payload: []byte(`{"by":"Bob"}`)}
		start3  = streamEvent(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_3"}})
		// The CLI's stdout has no stop_reason in its assistant events:
		// the stream's message_delta carries it.
		text, call = stdoutUnstopped(lines[0]), stdoutUnstopped(lines[1])
		start      = streamEvent(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_2"}})
		ended      = streamEvent(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"}})
		toolEnd    = streamEvent(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}})
	)
	goOnAnn := runner.QueuedWork{Text: "(Sent by Parley.) Parley restarted while you were working, and stopped you. Go on where you left off.", By: "Ann", ByID: 1, Parley: true}
	again := store.Event{Type: "prompt", Payload: mustJSON(map[string]any{"text": goOnAnn.Text, "by": "Ann", "by_id": 1, "parley": true})}
	// A member's message that happens to read like Parley's is a member's.
	likeParley := store.Event{Type: "prompt", Payload: mustJSON(map[string]any{"text": goOnAnn.Text, "by": "Ann", "by_id": 1})}
	withBob := goOnAnn
	withBob.Text += " These messages sent to you meanwhile never reached you:\n\nFrom Bob:\nand the tests"
	onlyBob := runner.QueuedWork{Text: "(Sent by Parley.) Parley restarted, and these messages sent to you meanwhile never reached you:\n\nFrom Bob:\nand the tests", By: "Bob", ByID: 2, Parley: true}
	for _, tc := range []struct {
		name       string
		transcript bool // the fixture's: the whole turn, ended
		log        []store.Event
		want       *runner.QueuedWork
		barred     int64 // a member who may no longer prompt
	}{
		{"the log lags, the transcript ended the turn", true, []store.Event{started, goAnn, initEv, text}, nil, 0},
		{"the log holds the last message, only the transcript its end", true, []store.Event{started, goAnn, initEv, text, call, stdout(lines[2]), stdoutUnstopped(lines[3])}, nil, 0},
		{"the log lags, the transcript ended the turn, a prompt queued", true, []store.Event{started, goAnn, initEv, text, testBob}, &onlyBob, 0},
		{"cut in a tool call", false, []store.Event{started, goAnn, initEv, text, call, toolEnd}, &goOnAnn, 0},
		{"cut with a prompt queued", false, []store.Event{started, goAnn, initEv, text, testBob}, &withBob, 0},
		{"cut before its first message", false, []store.Event{started, goAnn, initEv}, &goOnAnn, 0},
		{"never begun", false, []store.Event{started, goAnn}, &runner.QueuedWork{
			Text: "(Sent by Parley.) Parley restarted, and these messages sent to you meanwhile never reached you:\n\nFrom Ann:\ngo", By: "Ann", ByID: 1, Parley: true}, 0},
		{"ended in the stream, its result lost", false, []store.Event{started, goAnn, initEv, start, ended}, nil, 0},
		{"ended, the next not begun", false, []store.Event{started, goAnn, initEv, text, result, testBob}, &onlyBob, 0},
		{"being stopped", false, []store.Event{started, goAnn, initEv, text, stop}, nil, 0},
		{"being stopped, a prompt queued", false, []store.Event{started, goAnn, initEv, text, stop, testBob}, &onlyBob, 0},
		{"stopped by the watchdog", false, []store.Event{started, goAnn, initEv, text, stall}, nil, 0},
		{"waiting for an ask", false, []store.Event{started, goAnn, initEv, ask}, nil, 0},
		{"its ask answered", false, []store.Event{started, goAnn, initEv, ask, gave}, &goOnAnn, 0},
		{"an earlier run's turns do not count", false, []store.Event{started, goAnn, initEv, text, {Type: "run_ended", Payload: []byte(`{}`)}, started}, nil, 0},
		{"Parley's own prompt cut again", false, []store.Event{started, again, initEv, text}, nil, 0},
		{"a member's prompt that reads like Parley's", false, []store.Event{started, likeParley, initEv, text}, &goOnAnn, 0},
		{"a barred member's queued prompt", false, []store.Event{started, goAnn, initEv, text, testBob}, &goOnAnn, 2},
		{"a barred member's cut turn", false, []store.Event{started, goAnn, initEv, text, testBob}, &onlyBob, 1},
		{"a barred member's turn never begun", false, []store.Event{started, goAnn}, nil, 1},
		{"its ask timed out", false, []store.Event{started, goAnn, initEv, ask, timeout}, &goOnAnn, 0},
		{"its ask withdrawn", false, []store.Event{started, goAnn, initEv, ask, withdrawn}, &goOnAnn, 0},
		{"its ask detached by the takeover", false, []store.Event{started, goAnn, initEv, ask, lost}, nil, 0},
		{"its answer's result logged, not its delivery", false, []store.Event{started, goAnn, initEv, text, call, askCall, answered, stdoutUnstopped(lines[2])}, &goOnAnn, 0},
		{"its answer not taken", false, []store.Event{started, goAnn, initEv, text, call, askCall, answered}, nil, 0},
		{"its ask ended by the crash", false, []store.Event{started, goAnn, initEv, text, call, askCall, aborted}, nil, 0},
		{"a Stop between turns", false, []store.Event{started, goAnn, initEv, text, result, stopBob, testBob, initEv}, &runner.QueuedWork{
			Text: "(Sent by Parley.) Parley restarted while you were working, and stopped you. Go on where you left off.", By: "Bob", ByID: 2, Parley: true}, 0},
		{"a turn that goes on after a message that ended", false, []store.Event{started, goAnn, initEv, start, ended, start3}, &goOnAnn, 0},
		{"a turn resent to a fresh conversation", false, []store.Event{started, resent, initEv, text}, &goOnAnn, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, s, cfg := setup(t)
			claudeID := fixtureSession
			if !tc.transcript {
				claudeID = "00000000-0000-0000-0000-000000000000" // none
			}
			appendLog(t, st, s.ID, slicesClone(tc.log)...)
			rec := New(st, &published{}, slog.New(slog.DiscardHandler))
			sess := Session{ID: s.ID, ClaudeSessionID: claudeID, ConfigDir: cfg, Status: "ended", GoOn: true}
			if tc.barred != 0 {
				sess.MayPrompt = func(_ context.Context, id int64) (bool, error) { return id != tc.barred, nil }
			}
			res, err := rec.Reconcile(t.Context(), sess)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == nil && res.GoOn != nil:
				t.Fatalf("goes on with %+v, want nothing", *res.GoOn)
			case tc.want != nil && res.GoOn == nil:
				t.Fatalf("goes on with nothing, want %+v", *tc.want)
			case tc.want != nil:
				want := *tc.want
				want.Item = res.GoOn.Item
				if diff := cmp.Diff(want, *res.GoOn); diff != "" {
					t.Fatalf("the prompt that goes on (-want +got):\n%s", diff)
				}
			}
			got := logOf(t, st, s.ID)
			said := false
			for _, e := range got {
				said = said || e.Type == "notice" && bytes.Contains(e.Payload, []byte("Claude is asked to go on"))
			}
			if said != (tc.want != nil) || got[len(got)-1].Type != "run_ended" {
				t.Errorf("the page says Claude goes on: %v, last event %s; want %v, then the run's end", said, got[len(got)-1].Type, tc.want != nil)
			}
			line, err := st.QueueOf(t.Context(), s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(line) != 0 {
					t.Errorf("kept in line: %+v, want nothing", line)
				}
				return
			}
			if len(line) != 1 || line[0].Text != tc.want.Text || line[0].ByID != tc.want.ByID || line[0].ID != res.GoOn.Item || !line[0].Parley {
				t.Fatalf("kept in line: %+v, want the prompt that goes on (item %d)", line, res.GoOn.Item)
			}
			if ours, err := st.LeftQueue(t.Context(), line[0].ID); err != nil || ours {
				t.Errorf("the prompt that goes on is this replica's (%v, %v), want it released for the next pass over the line", ours, err)
			}
			// A second lost run while that prompt still waits in line:
			// nothing goes on again (one is enough), nothing says so.
			appendLog(t, st, s.ID, started, goAnn, initEv)
			res, err = rec.Reconcile(t.Context(), sess)
			if err != nil || res.GoOn != nil || res.Events != 1 {
				t.Errorf("with a prompt that goes on in line: %+v, %v; want the run closed, nothing more to go on with", res, err)
			}
			if got := logOf(t, st, s.ID); got[len(got)-1].Type != "run_ended" || got[len(got)-2].Type != "system" {
				t.Errorf("with a prompt that goes on in line the log ends %s, %s; want only the run's end added", got[len(got)-2].Type, got[len(got)-1].Type)
			}
			// Once it was sent, a run starting for the team's next message
			// finds a third lost run: its prompt that goes on is kept as
			// this replica's, for the starting run to send first.
			if _, err := st.ClaimQueue(t.Context(), s.ID); err != nil {
				t.Fatal(err)
			}
			if ours, err := st.LeftQueue(t.Context(), line[0].ID); err != nil || !ours {
				t.Fatalf("remove the claimed prompt: %v, %v", ours, err)
			}
			appendLog(t, st, s.ID, started, goAnn, initEv)
			starting := sess
			starting.Starting, starting.MayPrompt = true, nil
			res, err = rec.Reconcile(t.Context(), starting)
			if err != nil || res.GoOn == nil || !res.GoOn.Parley || !strings.HasPrefix(res.GoOn.Text, runner.SentByParley) {
				t.Fatalf("a run starting: %+v, %v; want a prompt that goes on", res, err)
			}
			if ours, err := st.LeftQueue(t.Context(), res.GoOn.Item); err != nil || !ours {
				t.Errorf("the starting run's prompt that goes on is this replica's: %v, %v; want it kept as ours", ours, err)
			}
		})
	}
}

// TestGoOnWithAMemberMessageInLineThatReadsLikeParleys: a prompt of
// Parley's own waiting in line stops a second go-on (TestGoOnAfterLostRun);
// a member's message waiting there is not Parley's, whatever its text.
func TestGoOnWithAMemberMessageInLineThatReadsLikeParleys(t *testing.T) {
	st, s, cfg := setup(t)
	if _, err := st.KeepQueued(t.Context(), store.QueueItem{SessionID: s.ID, Kind: store.QueuePrompt,
		Text: runner.SentByParley + "Parley restarted while you were working, and stopped you.", By: "Bob", ByID: 2}); err != nil {
		t.Fatal(err)
	}
	appendLog(t, st, s.ID, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)},
		store.Event{Type: "prompt", Payload: []byte(`{"text":"go","by":"Ann","by_id":1}`)},
		store.Event{Type: "system", Payload: []byte(`{"type":"system","subtype":"init"}`)})
	rec := New(st, &published{}, slog.New(slog.DiscardHandler))
	res, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: "00000000-0000-0000-0000-000000000000",
		ConfigDir: cfg, Status: "ended", GoOn: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.GoOn == nil || !res.GoOn.Parley || res.GoOn.By != "Ann" {
		t.Fatalf("goes on with %+v; want Ann's cut turn to go on, as Parley's", res.GoOn)
	}
	line, err := st.QueueOf(t.Context(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(line) != 2 || line[0].Parley || !line[1].Parley || line[1].ID != res.GoOn.Item {
		t.Fatalf("the line: %+v; want Bob's message, then Parley's prompt that goes on", line)
	}
}

// TestReconcileLeavesARunStartedSince: a lost run reconciled by a run that
// started since is not the last run any more; reconciling it again, named
// by its run_started's seq, touches nothing (the run now live keeps its
// log, and nothing goes on).
func TestReconcileLeavesARunStartedSince(t *testing.T) {
	st, s, cfg := setup(t)
	appendLog(t, st, s.ID, store.Event{Type: "run_started", Payload: []byte(`{"pid":1}`)},
		store.Event{Type: "prompt", Payload: []byte(`{"text":"go","by":"Ann","by_id":1}`)})
	lost := store.LostRun{SessionID: s.ID, StartSeq: 1}
	appendLog(t, st, s.ID, store.Event{Type: "run_ended", Payload: []byte(`{}`)},
		store.Event{Type: "run_started", Payload: []byte(`{"pid":2}`)},
		store.Event{Type: "prompt", Payload: []byte(`{"text":"and now","by":"Ann","by_id":1}`)})
	before := len(logOf(t, st, s.ID))
	rec := New(st, &published{}, slog.New(slog.DiscardHandler))
	res, err := rec.Reconcile(t.Context(), Session{ID: s.ID, ClaudeSessionID: fixtureSession, ConfigDir: cfg,
		Status: "ended", GoOn: true, LostRun: lost.StartSeq})
	if err != nil || res.Events != 0 || res.GoOn != nil {
		t.Fatalf("reconcile: %+v, %v; want nothing done", res, err)
	}
	if after := len(logOf(t, st, s.ID)); after != before {
		t.Errorf("the log grew from %d to %d events, want it untouched", before, after)
	}
}

func toolUseID(t *testing.T, e entry) string {
	t.Helper()
	var m struct {
		Content []struct {
			Type, ID string
		}
	}
	if err := json.Unmarshal(e.Message, &m); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			return b.ID
		}
	}
	t.Fatal("no tool_use in the fixture's line")
	return ""
}

// stdoutUnstopped is the CLI's stdout event of a transcript line, as the
// CLI prints it: no stop_reason yet.
func stdoutUnstopped(e entry) store.Event {
	var m map[string]any
	if err := json.Unmarshal(e.Message, &m); err != nil {
		panic(err)
	}
	m["stop_reason"] = nil
	e.Message = mustJSON(m)
	return stdout(e)
}

// slicesClone copies events, so appendLog's numbering does not leak between cases.
func slicesClone(evs []store.Event) []store.Event { return append([]store.Event(nil), evs...) }
