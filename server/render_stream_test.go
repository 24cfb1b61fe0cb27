package server

import (
	"context"
	"fmt"
	"html"
	"strings"
	"testing"

	"parley/store"
)

// streamEvents builds a log from short forms: "start m1", "text m1 hello"
// (the message id is only for reading: deltas carry none), "done m1 hello"
// (the completed message), "stop", "result", "run_ended".
func streamEvents(t *testing.T, first int64, forms ...string) []store.Event {
	t.Helper()
	var evs []store.Event
	for i, f := range forms {
		w := strings.SplitN(f, " ", 3)
		e := store.Event{Seq: first + int64(i), Type: "stream_event"}
		switch w[0] {
		case "start":
			e.Payload = fmt.Appendf(nil, `{"event":{"type":"message_start","message":{"id":%q}}}`, w[1])
		case "text":
			e.Payload = fmt.Appendf(nil, `{"event":{"type":"content_block_delta","delta":{"type":"text_delta","text":%q}}}`, w[2])
		case "stop":
			e.Payload = []byte(`{"event":{"type":"message_stop"}}`)
		case "done":
			e.Type, e.Payload = "assistant", fmt.Appendf(nil, `{"message":{"id":%q,"content":[{"type":"text","text":%q}]}}`, w[1], w[2])
		case "result":
			e.Type, e.Payload = "result", []byte(`{"is_error":false}`)
		case "run_ended":
			e.Type, e.Payload = "run_ended", []byte(`{"exit_code":-1,"reason":"killed"}`)
		default:
			t.Fatalf("unknown form %q", f)
		}
		evs = append(evs, e)
	}
	return evs
}

// publish renders evs one at a time, as the publisher does, and returns
// the fragments with the frames' unbound marks.
func publish(tr *streamTracker, evs []store.Event) (string, bool) {
	var b strings.Builder
	unbound := false
	for _, e := range evs {
		r := tr.renderer("s1", e.Seq)
		b.Write(r.frame(context.Background(), []store.Event{e}).Data)
		tr.keep("s1", r, e.Seq, e.Type)
		unbound = unbound || r.unbound
	}
	return b.String(), unbound
}

func TestStreamFragmentsNameTheirMessage(t *testing.T) {
	tests := []struct {
		name      string
		forms     []string
		want, not []string
	}{
		{"deltas name their own message",
			[]string{"start m1", "text m1 one", "done m1 one", "stop", "start m2", "text m2 two"},
			[]string{`beforeend:#m-m1 .body">one<`, `beforeend:#m-m2 .body">two<`}, []string{".live .body"}},
		{"a run that ends mid-message cuts the block",
			[]string{"start m1", "text m1 half a", "run_ended"},
			[]string{`beforeend:#m-m1"><div class="cut-mark" role="note">` + html.EscapeString(cutByRunEnd)}, []string{"delete"}},
		{"a turn that ends mid-message cuts the block",
			[]string{"start m1", "text m1 half a", "result"},
			[]string{`class="cut-mark"`, cutByTurnEnd}, nil},
		{"a message that only called tools leaves no block",
			[]string{"start m1", "stop", "run_ended"},
			[]string{`id="m-m1" hx-swap-oob="delete"`}, []string{"cut-mark"}},
		{"a reply that broke off and was asked again is cut",
			[]string{"start m1", "text m1 half a", "start m2", "text m2 whole"},
			[]string{`beforeend:#m-m1"><div class="cut-mark"`, `beforeend:#m-m2 .body">whole<`}, nil},
		{"a finished reply is not cut",
			[]string{"start m1", "text m1 all", "done m1 all", "stop", "result", "run_ended"},
			nil, []string{"cut-mark", "delete"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, unbound := publish(newStreamTracker(), streamEvents(t, 1, tt.forms...))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("fragments lack %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("fragments hold %q:\n%s", n, got)
				}
			}
			if unbound {
				t.Error("a frame is unbound although the stream was seen from its start")
			}
		})
	}
}

// TestCatchUpMakesNoLiveBlockItReplaces: the paged catch-up holds a
// completed message's place with a block that is not live (htmx keeps the
// live class of a replaced block until the frame settles, and a delta
// then landed in it), and the open message's deltas name their block.
func TestCatchUpMakesNoLiveBlockItReplaces(t *testing.T) {
	evs := streamEvents(t, 1, "start m1", "text m1 first", "done m1 first", "stop", "start m2", "text m2 second")
	got := string(newPagedRenderer(map[string]bool{"m1": true}).frame(context.Background(), evs).Data)
	if !strings.Contains(got, `<div class="item assistant" id="m-m1">`) || strings.Contains(got, `live" id="m-m1"`) {
		t.Errorf("the completed message's place is not held by a block that is not live:\n%s", got)
	}
	if !strings.Contains(got, `class="item assistant live" id="m-m2"`) || !strings.Contains(got, `beforeend:#m-m2 .body">second<`) {
		t.Errorf("the open message has no live block or its delta names another:\n%s", got)
	}
}

// TestStreamReadFromTheLogWhereNotSeen: a publisher (or a catch-up) that
// did not see the stream start reads it from the log; without a way to,
// the frame is unbound and sockets read its events from the log.
func TestStreamReadFromTheLogWhereNotSeen(t *testing.T) {
	evs := streamEvents(t, 40, "text m9 later", "run_ended")
	tr := newStreamTracker()
	if got, unbound := publish(tr, evs[:1]); !unbound || strings.Contains(got, "beforeend") {
		t.Errorf("without the log: unbound %v, fragments %s", unbound, got)
	}
	var asked []int64
	tr.setResolve(func(_ context.Context, _ string, at int64) (store.OpenStream, error) {
		asked = append(asked, at)
		return store.OpenStream{MessageID: "m9", HasText: true}, nil
	})
	got, unbound := publish(tr, evs)
	if unbound || !strings.Contains(got, `beforeend:#m-m9 .body">later<`) || !strings.Contains(got, `beforeend:#m-m9"><div class="cut-mark"`) {
		t.Errorf("read from the log: unbound %v, fragments %s", unbound, got)
	}
	if len(asked) != 1 || asked[0] != 39 {
		t.Errorf("the log was read at %v, want once at 39", asked)
	}
	// A gap in what was published: the tracker does not trust what it had.
	r := tr.renderer("s1", 100)
	if r.st.known {
		t.Errorf("after a gap the tracker still claims to know the stream: %+v", r.st)
	}
}

// TestStreamOpenAt reads the open stream from a real log.
func TestStreamOpenAt(t *testing.T) {
	e := newEnv(t, nil, envOptions{quiet: true})
	s := e.newSession()
	evs := streamEvents(t, 1, "start m1", "text m1 a", "done m1 a", "stop", "start m2", "stop", "start m3", "text m3 b", "run_ended")
	for i := range evs {
		evs[i].SessionID = s.ID
		if err := e.st.AppendEvent(t.Context(), evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		at   int64
		want store.OpenStream
	}{
		{0, store.OpenStream{}},
		{1, store.OpenStream{MessageID: "m1"}},
		{2, store.OpenStream{MessageID: "m1", HasText: true}},
		{3, store.OpenStream{MessageID: "m1", HasText: true, Done: true}},
		{4, store.OpenStream{}},
		{5, store.OpenStream{MessageID: "m2"}},
		{8, store.OpenStream{MessageID: "m3", HasText: true}},
		{9, store.OpenStream{}},
	}
	for _, tt := range tests {
		got, err := e.st.StreamOpenAt(t.Context(), s.ID, tt.at)
		if err != nil || got != tt.want {
			t.Errorf("StreamOpenAt(%d) = %+v, %v; want %+v", tt.at, got, err, tt.want)
		}
	}
}
