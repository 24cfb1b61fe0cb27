package askuser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gateAsker answers each form with answer once release is closed.
type gateAsker struct {
	release chan struct{}
	answer  Answer
}

func (g gateAsker) Ask(ctx context.Context, _ Form) (Answer, error) {
	select {
	case <-g.release:
		return g.answer, nil
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

type tokenTransport struct{ token string }

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, opts)
	return c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: tokenTransport{token}}, MaxRetries: -1}, nil)
}

// TestHTTPHandlerAsksWithProgress: ask_user over streamable HTTP reaches the
// run registered for the token, sends progress while the person thinks (the
// CLI fails a silent HTTP call at 60 s), and returns the answer; other
// tokens, and the token once its run ended, are refused.
func TestHTTPHandlerAsksWithProgress(t *testing.T) {
	b := NewBroker()
	asker := gateAsker{release: make(chan struct{}), answer: Answer{Status: StatusAnswered, Replies: []Reply{{Selected: []string{"Blue"}}}}}
	token := NewToken()
	unregister := b.Register(token, asker)
	srv := httptest.NewServer(httpHandler(b, 20*time.Millisecond))
	t.Cleanup(srv.Close)

	var progress atomic.Int32
	enough := make(chan struct{})
	cs, err := connectHTTP(t, srv.URL, token, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		if progress.Add(1) == 3 {
			close(enough)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	go func() {
		select {
		case <-enough: // three heartbeats while the ask waited
		case <-time.After(30 * time.Second):
		}
		close(asker.release)
	}()
	params := &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{"question": "Which colour?",
		"options": []map[string]string{{"label": "Blue"}, {"label": "Red"}}}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resultText(t, res), "User selected: Blue"; got != want || res.IsError {
		t.Errorf("result %q (error %v), want %q", got, res.IsError, want)
	}
	if n := progress.Load(); n < 3 {
		t.Errorf("%d progress notifications while waiting, want at least 3", n)
	}

	if _, err := connectHTTP(t, srv.URL, NewToken(), nil); err == nil {
		t.Error("a token of no run connected")
	}
	unregister()
	if _, err := cs.CallTool(t.Context(), params); err == nil {
		t.Error("the token of an ended run still asks")
	}
}
