package askuser

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The model reads answers keyed by its question ids, its chosen timeout
// reaches the server, and the result says cancelled when the run stopped.
func TestServeIDsTimeoutAndCancelled(t *testing.T) {
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered, AnsweredBy: "ann",
		Replies: []Reply{{Text: "billing"}, {Selected: []string{"Go"}}}}}
	cs := serveOverPipes(t, relayServer(t, asker))
	args := map[string]any{"timeout": 45, "questions": []any{
		map[string]any{"id": "name", "question": "Name?", "type": "text"},
		map[string]any{"id": "lang", "question": "Language?", "type": "single", "options": []any{
			map[string]any{"label": "Go"}, map[string]any{"label": "Rust"}}},
	}}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	byID, _ := json.Marshal(res.StructuredContent.(map[string]any)["answersById"])
	if want := `{"lang":{"selected":["Go"],"text":""},"name":{"selected":[],"text":"billing"}}`; string(byID) != want {
		t.Errorf("answersById = %s, want %s", byID, want)
	}
	if got, want := resultText(t, res), "The user answered your questions:\n1. [name] “Name?” → “billing”\n2. [lang] “Language?” → Go"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	asked := asker.questions()
	if len(asked) != 1 || asked[0].TimeoutSeconds != 45 || asked[0].Questions[0].ID != "name" {
		t.Errorf("relayed form = %+v, want timeout 45 and ids", asked)
	}

	asker.answer = Answer{Status: StatusCancelled, Reason: "the run was stopped"}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	sc := res.StructuredContent.(map[string]any)
	if sc["cancelled"] != true || sc["answered"] != false || sc["timedOut"] != false || sc["declined"] != false {
		t.Errorf("structured content of a cancelled ask = %v, want cancelled only", sc)
	}
}

// The tools carry annotations and the server its instructions, and the
// schemas state the 2–4 options and the timeout bounds.
func TestServeAnnotationsAndInstructions(t *testing.T) {
	cs := serveOverPipes(t, Config{URL: "http://127.0.0.1:1/ask", Token: "t", TimeoutSeconds: 60, MaxTimeoutSeconds: 600})
	if got := cs.InitializeResult().Instructions; got != serverInstructions {
		t.Errorf("instructions = %q, want the server's", got)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 2 {
		t.Fatalf("got %d tools, want 2", len(tools.Tools))
	}
	for _, tool := range tools.Tools {
		a := tool.Annotations
		if a == nil || !a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || a.IdempotentHint {
			t.Errorf("%s annotations = %+v, want read-only, not destructive, not idempotent", tool.Name, a)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Properties map[string]struct {
				Minimum, Maximum float64
			}
		}
		_ = json.Unmarshal(schema, &s)
		if got := s.Properties["timeout"]; got.Minimum != 10 || got.Maximum != 600 {
			t.Errorf("%s timeout bounds = %v–%v, want 10–600", tool.Name, got.Minimum, got.Maximum)
		}
	}
}

// A relay that is not listening yet is tried again with backoff; once the
// server is up, the question goes through exactly once.
func TestClientRetriesAFailedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here until the third attempt
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered, Replies: []Reply{{Text: "ok"}}}}
	b := NewBroker()
	b.Register("tok", asker)
	var dials atomic.Int32
	c := NewClient(Config{URL: "http://" + addr + "/ask", Token: "tok", TimeoutSeconds: 60})
	c.backoff = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if dials.Add(1) == 3 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return nil, err
			}
			srv := httptest.NewUnstartedServer(RelayHandler(b))
			srv.Listener.Close()
			srv.Listener = l
			srv.Start()
			t.Cleanup(srv.Close)
		}
		return dial(ctx, network, a)
	}
	c.http = &http.Client{Transport: tr}
	got, err := c.Ask(t.Context(), Single(Question{Question: "Q?"}))
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	if diff := cmp.Diff(asker.answer, got); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("dialled %d times, want 3", n)
	}
	if n := len(asker.questions()); n != 1 {
		t.Errorf("asked %d times, want once", n)
	}

	// With nothing listening at all, the client keeps trying (the last
	// backoff wait repeating) until its context ends.
	dials.Store(-100)
	c2 := NewClient(Config{URL: "http://127.0.0.1:1/ask", Token: "tok"})
	c2.backoff = []time.Duration{time.Millisecond, time.Millisecond}
	var tries atomic.Int32
	tr2 := http.DefaultTransport.(*http.Transport).Clone()
	tr2.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		tries.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}
	c2.http = &http.Client{Transport: tr2}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = c2.Ask(ctx, Single(Question{Question: "Q?"}))
	if !errors.Is(err, context.DeadlineExceeded) || tries.Load() <= 3 {
		t.Errorf("Ask with no server = %v after %d tries, want the context's end after more than 3", err, tries.Load())
	}
}
