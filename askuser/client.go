package askuser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"parley/limit"
)

// safetyGrace is how long the client waits past the server's own timeout
// before it gives up on the held request: the server answers timed_out at
// TimeoutSeconds, so reaching this means the server is stuck or gone.
const safetyGrace = 30 * time.Second

// maxAnswerBytes bounds the relay's response body. It holds any answer the
// server accepts: its text (at most limit.TextBytes, the limit of an answer
// on every surface) and its chosen labels (from a question of at most
// maxQuestionBytes), each byte of which JSON may write as a six-byte
// \u escape, and room for the rest. Cutting an answer short here made the
// model read "ask_user could not reach the user".
const maxAnswerBytes = 6*(limit.TextBytes+maxQuestionBytes) + 64<<10

// errSafetyDeadline is the cause of the client's own deadline.
var errSafetyDeadline = errors.New("ask-user safety deadline passed")

// retryBackoff is how long the client waits before each new attempt to
// connect to the relay: the server may be restarting, or busy accepting.
// The last wait repeats for as long as the server stays away.
var retryBackoff = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// Client relays questions to the Parley server's [RelayHandler]. It
// implements [Asker].
type Client struct {
	cfg     Config
	http    *http.Client
	grace   time.Duration
	backoff []time.Duration // waits before each retry of a failed connection
}

// NewClient returns a Client for c.
func NewClient(c Config) *Client {
	// No http.Client.Timeout: the request is held for as long as a person
	// takes to answer; Ask bounds it with its own deadline instead.
	return &Client{cfg: c, http: &http.Client{}, grace: safetyGrace, backoff: retryBackoff}
}

// Ask posts f to the relay as one request, which the server holds until the
// ask is answered, times out or is cancelled, and returns the [Answer]. If
// the server has not answered TimeoutSeconds + 30 s after the call, Ask
// returns a timed_out Answer itself. When ctx ends, Ask abandons the request
// (which cancels the ask on the server) and returns an error wrapping the
// cause. While the server cannot be reached or the connection breaks, Ask
// asks again after a backoff wait, until ctx ends or the deadline passes.
// A refusal is an error whose text says what happened, with the HTTP status
// and body.
func (c *Client) Ask(ctx context.Context, f Form) (Answer, error) {
	if err := f.Validate(); err != nil {
		return Answer{}, fmt.Errorf("ask user: %w", err)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return Answer{}, fmt.Errorf("ask user: %w", err)
	}
	reqCtx := ctx
	timeout := c.cfg.TimeoutSeconds
	if f.TimeoutSeconds > 0 {
		timeout = f.TimeoutSeconds
	}
	if timeout > 0 {
		d := time.Duration(timeout)*time.Second + c.grace
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeoutCause(ctx, d, errSafetyDeadline)
		defer cancel()
	}
	a, err := c.postRetrying(reqCtx, body)
	switch {
	case err == nil:
		return a, nil
	case ctx.Err() != nil:
		return Answer{}, fmt.Errorf("ask user: %w", context.Cause(ctx))
	case errors.Is(context.Cause(reqCtx), errSafetyDeadline):
		return Answer{Status: StatusTimedOut}, nil
	default:
		return Answer{}, err
	}
}

// postRetrying posts body, and posts it again after a backoff wait (the
// last wait repeating) for as long as the relay cannot be reached or the
// connection is lost before an answer, until ctx ends: Parley may be
// restarting, and telling the model that nobody could be reached would be
// false (it answers itself then). A server that went away has ended the
// ask it held (or its replacement detached it), so asking again opens no
// second card for the same question. Only an answer from the server is
// final: a refusal (403 for a run token that has ended, say) or an error
// of its own.
func (c *Client) postRetrying(ctx context.Context, body []byte) (Answer, error) {
	for attempt := 0; ; attempt++ {
		a, err := c.post(ctx, body)
		var lost *lostError
		if err == nil || !errors.As(err, &lost) || len(c.backoff) == 0 {
			return a, err
		}
		t := time.NewTimer(c.backoff[min(attempt, len(c.backoff)-1)])
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Answer{}, err
		}
	}
}

// lostError is a relay request that got no answer from the server: it
// could not connect, the connection broke, or a proxy said the server is
// unavailable.
type lostError struct{ err error }

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// post sends one relay request and decodes the answer.
func (c *Client) post(ctx context.Context, body []byte) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("ask user: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Answer{}, &lostError{fmt.Errorf("could not reach the Parley server at %s: %w", c.cfg.URL, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return Answer{}, &lostError{fmt.Errorf("read the Parley server's answer: %w", err)}
	}
	if len(data) > maxAnswerBytes {
		// Never decode a cut answer: say what happened instead.
		return Answer{}, fmt.Errorf("the Parley server's answer is over %d bytes, the most this client reads", maxAnswerBytes)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return Answer{}, &lostError{fmt.Errorf("the Parley server is unavailable (HTTP %s)", resp.Status)}
	}
	if resp.StatusCode != http.StatusOK {
		return Answer{}, fmt.Errorf("the Parley server refused the question (HTTP %s): %s",
			resp.Status, strings.TrimSpace(string(data)))
	}
	var a Answer
	if err := json.Unmarshal(data, &a); err != nil {
		return Answer{}, fmt.Errorf("decode the Parley server's answer: %w", err)
	}
	switch a.Status {
	case StatusAnswered, StatusDeclined, StatusTimedOut, StatusCancelled:
		return a, nil
	default:
		return Answer{}, fmt.Errorf("the Parley server answered with an unknown status %q", a.Status)
	}
}
