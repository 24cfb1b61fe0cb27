package askuser

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveOverPipes runs Serve for cfg over io.Pipes, as the CLI runs
// `parley mcp-askuser` over stdin and stdout, and returns a connected client
// session. Cleanup closes the session and checks that Serve returns nil.
func serveOverPipes(t *testing.T, cfg Config) *mcp.ClientSession {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), cfg, serverIn, serverOut) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve returned %v after the client closed, want nil", err)
		}
	})
	return cs
}

// resultText returns the single text block of res.
func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want *mcp.TextContent", res.Content[0])
	}
	return tc.Text
}

func TestServeAskUser(t *testing.T) {
	tests := []struct {
		name        string
		answer      Answer
		args        map[string]any
		wantText    string
		wantIsError bool
	}{
		{"answered", Answer{Status: StatusAnswered, AnsweredBy: "ann", Replies: []Reply{{Selected: []string{"Blue"}}}},
			map[string]any{"question": "Colour?", "options": []any{map[string]any{"label": "Red"}, map[string]any{"label": "Blue"}}},
			"User selected: Blue", false},
		{"free text", Answer{Status: StatusAnswered, Replies: []Reply{{Text: "port 8080"}}},
			map[string]any{"question": "Which port?"}, "User answered: port 8080", false},
		{"timed out", Answer{Status: StatusTimedOut},
			map[string]any{"question": "Which port?"}, timedOutText, true},
		{"cancelled", Answer{Status: StatusCancelled, Reason: "the session was stopped"},
			map[string]any{"question": "Which port?", "multiSelect": false},
			"The question was cancelled before the user answered: the session was stopped.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := serveOverPipes(t, relayServer(t, &fakeAsker{answer: tt.answer}))
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); got != tt.wantText || res.IsError != tt.wantIsError {
				t.Errorf("got %q, isError %v; want %q, isError %v", got, res.IsError, tt.wantText, tt.wantIsError)
			}
		})
	}
}

func TestServeInvalidArguments(t *testing.T) {
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered, Replies: []Reply{{Text: "x"}}}}
	cs := serveOverPipes(t, relayServer(t, asker))
	tests := []struct {
		name      string
		args      any
		wantField string
	}{
		{"no arguments", nil, "question"},
		{"empty question", map[string]any{"question": ""}, "question"},
		{"question not a string", map[string]any{"question": 42}, "question"},
		{"option without label", map[string]any{"question": "Q?", "options": []any{map[string]any{"label": "A"}, map[string]any{"description": "d"}}}, "options[1].label"},
		{"one option", map[string]any{"question": "Q?", "options": []any{map[string]any{"label": "A"}}}, "options: give 2–4 options, got 1"},
		{"timeout too short", map[string]any{"question": "Q?", "timeout": 3}, "timeout: between 10 and"},
		{"options not an array", map[string]any{"question": "Q?", "options": "A or B"}, "options"},
		{"unknown field", map[string]any{"question": "Q?", "choices": []any{"A"}}, `"choices"`},
		{"multiSelect without options", map[string]any{"question": "Q?", "multiSelect": true}, "multiSelect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			got := resultText(t, res)
			if !res.IsError || !strings.HasPrefix(got, "Invalid ask_user arguments: ") || !strings.Contains(got, tt.wantField) {
				t.Errorf("got %q, isError %v; want an error result naming %s", got, res.IsError, tt.wantField)
			}
		})
	}
	if len(asker.questions()) != 0 {
		t.Errorf("invalid calls reached the asker %d times", len(asker.questions()))
	}
}

func TestServeRelayRefused(t *testing.T) {
	cfg := relayServer(t, &fakeAsker{})
	cfg.Token = "ended"
	cs := serveOverPipes(t, cfg)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"question": "Q?"}})
	if err != nil {
		t.Fatal(err)
	}
	got := resultText(t, res)
	want := "ask_user could not reach the user: the Parley server refused the question (HTTP 403 Forbidden): unknown or ended run token"
	if !res.IsError || got != want {
		t.Errorf("got %q, isError %v; want %q, isError true", got, res.IsError, want)
	}
}

func TestServeCancel(t *testing.T) {
	asker := newBlockingAsker()
	cs := serveOverPipes(t, relayServer(t, asker))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"question": "Q?"}})
		errc <- err
	}()
	<-asker.started
	// Cancelling the call sends notifications/cancelled, as the CLI does when
	// the user interrupts the turn; the held relay request must end with it.
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool error = %v, want context.Canceled", err)
	}
	select {
	case err := <-asker.done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("relay request ended with %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay request was not cancelled")
	}
}

func TestServeToolSchema(t *testing.T) {
	cs := serveOverPipes(t, relayServer(t, &fakeAsker{}))
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 2 || res.Tools[0].Name != "ask_user" || res.Tools[1].Name != "ask_user_questions" {
		t.Fatalf("tools = %+v, want ask_user and ask_user_questions", res.Tools)
	}
	if cs.InitializeResult() != nil && cs.InitializeResult().ServerInfo.Name != "parley" {
		t.Errorf("server name = %q, want parley", cs.InitializeResult().ServerInfo.Name)
	}
	data, err := json.Marshal(res.Tools[0].InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	items := props["options"].(map[string]any)["items"].(map[string]any)
	gotTypes := map[string]any{
		"root":         got["type"],
		"question":     props["question"].(map[string]any)["type"],
		"options":      props["options"].(map[string]any)["type"],
		"item":         items["type"],
		"label":        items["properties"].(map[string]any)["label"].(map[string]any)["type"],
		"description":  items["properties"].(map[string]any)["description"].(map[string]any)["type"],
		"multiSelect":  props["multiSelect"].(map[string]any)["type"],
		"default":      props["multiSelect"].(map[string]any)["default"],
		"required":     got["required"],
		"itemRequired": items["required"],
	}
	want := map[string]any{
		"root": "object", "question": "string", "options": "array", "item": "object",
		"label": "string", "description": "string", "multiSelect": "boolean", "default": false,
		"required": []any{"question"}, "itemRequired": []any{"label"},
	}
	if diff := cmp.Diff(want, gotTypes); diff != "" {
		t.Errorf("input schema mismatch (-want +got):\n%s\nschema: %s", diff, data)
	}
}

// progressRecorder collects the progress notifications a client receives.
type progressRecorder struct {
	mu     sync.Mutex
	tokens []any
}

func (p *progressRecorder) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens = append(p.tokens, req.Params.ProgressToken)
}

func (p *progressRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tokens)
}

func TestServeHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan Answer)
		asker := askerFunc(func(ctx context.Context, q Form) (Answer, error) {
			select {
			case a := <-release:
				return a, nil
			case <-ctx.Done():
				return Answer{}, ctx.Err()
			}
		})
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := newServer(&askTool{asker: asker, heartbeat: heartbeatInterval}).Connect(t.Context(), serverT, nil)
		if err != nil {
			t.Fatal(err)
		}
		var progress progressRecorder
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"},
			&mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
		cs, err := client.Connect(t.Context(), clientT, nil)
		if err != nil {
			t.Fatal(err)
		}

		call := func(token any) <-chan *mcp.CallToolResult {
			done := make(chan *mcp.CallToolResult, 1)
			params := &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"question": "Q?"}}
			if token != nil {
				params.SetProgressToken(token)
			}
			go func() {
				res, err := cs.CallTool(t.Context(), params)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			return done
		}

		// With a progress token: one heartbeat every 10 s while waiting.
		done := call("tok-1")
		time.Sleep(35 * time.Second)
		synctest.Wait()
		if got, want := progress.count(), 3; got != want {
			t.Errorf("after 35 s: %d progress notifications, want %d", got, want)
		}
		release <- Answer{Status: StatusAnswered, Replies: []Reply{{Text: "ok"}}}
		if got := resultText(t, <-done); got != "User answered: ok" {
			t.Errorf("result = %q", got)
		}
		// The heartbeat stops with the call.
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := progress.count(), 3; got != want {
			t.Errorf("after the answer: %d progress notifications, want %d", got, want)
		}

		// Without a progress token: no notifications at all.
		done = call(nil)
		time.Sleep(35 * time.Second)
		synctest.Wait()
		release <- Answer{Status: StatusTimedOut}
		<-done
		if got, want := progress.count(), 3; got != want {
			t.Errorf("call without a token sent %d notifications", got-want)
		}
		for _, tok := range progress.tokens {
			if tok != "tok-1" {
				t.Errorf("progress token = %v, want tok-1", tok)
			}
		}

		cs.Close()
		ss.Wait()
	})
}

func TestServeAskUserQuestions(t *testing.T) {
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered, AnsweredBy: "ann",
		Replies: []Reply{{Text: "billing"}, {Selected: []string{"Yes"}}}}}
	cs := serveOverPipes(t, relayServer(t, asker))
	args := map[string]any{"title": "New service", "questions": []any{
		map[string]any{"question": "Name?", "type": "text", "placeholder": "e.g. billing"},
		map[string]any{"question": "Public?", "type": "yes_no", "required": false},
	}}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	want := "The user answered your questions:\n1. “Name?” → “billing”\n2. “Public?” → Yes"
	if got := resultText(t, res); got != want || res.IsError {
		t.Errorf("got %q (error %v), want %q", got, res.IsError, want)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	wantSC := `{"answered":true,"answeredBy":"ann","answers":[{"question":"Name?","selected":[],"text":"billing"},{"question":"Public?","selected":["Yes"],"text":""}],"answersById":{},"cancelled":false,"declined":false,"message":"The user answered your questions:\n1. “Name?” → “billing”\n2. “Public?” → Yes","timedOut":false}`
	if string(sc) != wantSC {
		t.Errorf("structured content = %s, want %s", sc, wantSC)
	}
	wantForm := Form{Title: "New service", Questions: []Question{
		{Question: "Name?", Type: TypeText, Placeholder: "e.g. billing"},
		{Question: "Public?", Type: TypeYesNo, Optional: true},
	}}
	if diff := cmp.Diff([]Form{wantForm}, asker.questions()); diff != "" {
		t.Errorf("asked mismatch (-want +got):\n%s", diff)
	}
}

func TestServeAskUserQuestionsInvalid(t *testing.T) {
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered}}
	cs := serveOverPipes(t, relayServer(t, asker))
	opts := func(n int) []any {
		var o []any
		for i := range n {
			o = append(o, map[string]any{"label": string(rune('A' + i))})
		}
		return o
	}
	tests := []struct {
		name string
		args any
		want string
	}{
		{"no questions", map[string]any{"questions": []any{}}, "At least one question is required"},
		{"no arguments", nil, "At least one question is required"},
		{"one option", map[string]any{"questions": []any{
			map[string]any{"question": "A?", "type": "text"},
			map[string]any{"question": "B?", "type": "single", "options": opts(1)}}}, "question 2: options: give 2–4 options, got 1"},
		{"five options", map[string]any{"questions": []any{
			map[string]any{"question": "B?", "type": "multiple", "options": opts(5)}}}, "question 1: options: give 2–4 options, got 5"},
		{"repeated id", map[string]any{"questions": []any{
			map[string]any{"id": "name", "question": "A?", "type": "text"},
			map[string]any{"id": "name", "question": "B?", "type": "text"}}}, `question 2: id: "name" repeats the id of question 1`},
		{"timeout too long", map[string]any{"timeout": 3600, "questions": []any{map[string]any{"question": "A?", "type": "text"}}}, "timeout: between 10 and 60 seconds, got 3600"},
		{"bad type", map[string]any{"questions": []any{map[string]any{"question": "B?", "type": "date"}}}, "question 1: type:"},
		{"missing type", map[string]any{"questions": []any{map[string]any{"question": "B?"}}}, "question 1: type: required"},
		{"empty question", map[string]any{"questions": []any{map[string]any{"question": "", "type": "text"}}}, "question 1: question: must not be empty"},
		{"too many", map[string]any{"questions": []any{
			map[string]any{"question": "1?", "type": "text"}, map[string]any{"question": "2?", "type": "text"},
			map[string]any{"question": "3?", "type": "text"}, map[string]any{"question": "4?", "type": "text"},
			map[string]any{"question": "5?", "type": "text"}}}, "questions: at most 4"},
		{"options on yes/no", map[string]any{"questions": []any{map[string]any{"question": "B?", "type": "yes_no", "options": opts(2)}}}, "question 1: options:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_user_questions", Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			got := resultText(t, res)
			if !res.IsError || !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "Invalid ask_user_questions arguments: ") {
				t.Errorf("got %q (error %v), want an error containing %q", got, res.IsError, tt.want)
			}
		})
	}
	if n := len(asker.questions()); n != 0 {
		t.Errorf("invalid calls reached the asker %d times", n)
	}
}
