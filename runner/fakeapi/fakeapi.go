// Package fakeapi is a scripted fake of the Anthropic Messages API, for
// running the real claude CLI offline (ANTHROPIC_BASE_URL pointed at it).
//
// A Scenario is a list of Steps. Each main-model request is answered by one
// step, streamed as Server-Sent Events exactly as the real API streams them.
// Side requests (title and summary queries, token counts) are answered with a
// short text and consume no step.
package fakeapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ToolResultPlaceholder in a Step's Text is replaced by the text of the
// tool_result in the request being answered.
const ToolResultPlaceholder = "{{tool_result}}"

// ExhaustedText is the reply once a scenario has no steps left.
const ExhaustedText = "(fake model: no more scripted steps)"

// SideText is the reply to side requests (titles, summaries, other queries).
const SideText = "Fake side reply"

// Step is one scripted model response.
type Step struct {
	// Text is the assistant text: the whole reply (end_turn), or the text
	// before the tool_use when ToolName is set.
	Text string
	// Chunks splits Text into this many text_delta events (default 1).
	Chunks int
	// ChunkDelay is the pause between chunks, so tests can act mid-stream.
	ChunkDelay time.Duration
	// Sent, if set, is told when each text chunk (0, 1, ...) was written
	// and flushed to the CLI: a benchmark times model → page with it.
	Sent func(chunk int, at time.Time)
	// ToolName, if set, ends the reply with a tool_use block (stop_reason tool_use).
	ToolName string
	// ToolInput is marshalled to JSON as the tool_use input ({} if nil).
	ToolInput any
	// ToolInputFrom, if set, makes the tool_use input from the text of the
	// request's last tool_result (an id an earlier tool returned, say), in
	// place of ToolInput.
	ToolInputFrom func(toolResult string) any
	// Hold, if set, blocks the response after message_start and any text
	// until it is closed or the request's context ends.
	Hold <-chan struct{}
	// Status, if set, makes the reply an HTTP error with an Anthropic error
	// body. Measured on claude 2.1.328: 500, 529 and 401 are retried after
	// ~0.5 s, 1.2 s, 2.3 s… (a system/api_retry event each, up to 10); 400 is
	// retried at once without an event; 413 ends the turn (is_error result).
	// Each retry is a new request and consumes the next step.
	Status int
	// InputTokens is the usage the reply reports (10 if 0), so a test can
	// make a step cost money: the CLI prices usage by the model's rates.
	InputTokens int
}

// Scenario is the ordered script of model responses.
type Scenario []Step

// Server is a fake Messages API. Set the exported fields before serving.
type Server struct {
	// PerTurn restarts the script at every user prompt instead of keeping one
	// cursor: a request whose last user message holds no tool_result gets step
	// 0, and one answering this server's tool_use of step i gets step i+1.
	// One Server then serves any number of conversations (see Demo).
	PerTurn bool
	// Log receives one Debug line per request; nil discards.
	Log *slog.Logger

	scenario Scenario

	mu      sync.Mutex
	next    int           // cursor when !PerTurn
	main    []Request     // main-model requests, in arrival order
	side    []Request     // side requests
	changed chan struct{} // closed and replaced whenever main grows
	srv     *http.Server
	served  chan struct{} // closed when srv.Serve returned
	url     string
}

// New returns a Server for the scenario; call Start, or use it as an http.Handler.
func New(sc Scenario) *Server {
	return &Server{scenario: sc, changed: make(chan struct{})}
}

// Start listens on 127.0.0.1 on a free port and serves in the background until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("fakeapi listen: %w", err)
	}
	s.mu.Lock()
	s.srv = &http.Server{Handler: s}
	s.served = make(chan struct{})
	s.url = "http://" + ln.Addr().String()
	srv, served := s.srv, s.served
	s.mu.Unlock()
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	return nil
}

// URL returns the base URL for ANTHROPIC_BASE_URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the server, cutting open streams, and waits for it to stop.
func (s *Server) Close() {
	s.mu.Lock()
	srv, served := s.srv, s.served
	s.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	<-served
}

// Requests returns a copy of every main-model request recorded so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.main...)
}

// SideRequests returns a copy of every side request recorded so far.
func (s *Server) SideRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.side...)
}

// WaitRequests blocks until at least n main-model requests have arrived or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, changed := len(s.main), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d requests (have %d): %w", n, got, ctx.Err())
		}
	}
}

// ServeHTTP answers POST /v1/messages and /v1/messages/count_tokens; other
// probes (the CLI's HEAD /api/hello) get an empty 200.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":10}`)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.handleMessages(w, r)
	case r.Method == http.MethodHead || r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
	default:
		writeError(w, http.StatusNotFound)
	}
}

// handleMessages records the request, picks its reply and streams it.
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Header = r.Header.Clone()
	if isSide(req) {
		s.mu.Lock()
		s.side = append(s.side, req)
		s.mu.Unlock()
		s.logf(r.Context(), "side request", req)
		reply{model: req.Model, text: sideText(req)}.stream(r.Context(), w)
		return
	}
	step, rep := s.pick(&req)
	s.logf(r.Context(), "main request", req)
	if step.Status != 0 {
		writeError(w, step.Status)
		return
	}
	rep.stream(r.Context(), w)
}

// pick chooses the step for a main request, fills req.Step and req.ToolUseID,
// records req and wakes WaitRequests.
func (s *Server) pick(req *Request) (Step, reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next
	if s.PerTurn {
		i = s.turnStep(*req)
	} else {
		s.next++
	}
	var step Step
	if i >= 0 && i < len(s.scenario) {
		step, req.Step = s.scenario[i], i
	} else {
		step = Step{Text: ExhaustedText}
	}
	rep := reply{model: req.Model, text: step.Text, chunks: step.Chunks,
		chunkDelay: step.ChunkDelay, sent: step.Sent, hold: step.Hold, toolName: step.ToolName, toolInput: step.ToolInput,
		inputTokens: step.InputTokens}
	if _, text, _, ok := req.LastToolResult(); ok {
		rep.text = strings.ReplaceAll(rep.text, ToolResultPlaceholder, text)
	}
	if step.ToolInputFrom != nil {
		_, text, _, _ := req.LastToolResult()
		rep.toolInput = step.ToolInputFrom(text)
	}
	if step.ToolName != "" && step.Status == 0 {
		rep.toolID = fmt.Sprintf("toolu_fake_%d_%s", req.Step, randomHex(8))
		req.ToolUseID = rep.toolID
	}
	s.main = append(s.main, *req)
	close(s.changed)
	s.changed = make(chan struct{})
	return step, rep
}

// turnStep is the PerTurn rule: a user prompt starts at step 0; a tool_result
// for this server's tool_use of step i continues at step i+1; anything else
// (a tool id this server did not issue) is past the end of the script.
func (s *Server) turnStep(req Request) int {
	id, _, _, ok := req.LastToolResult()
	if !ok {
		return 0
	}
	var i int
	var rest string
	if _, err := fmt.Sscanf(strings.ReplaceAll(id, "_", " "), "toolu fake %d %s", &i, &rest); err != nil {
		return len(s.scenario)
	}
	return i + 1
}

// logf writes one Debug line about a request.
func (s *Server) logf(ctx context.Context, msg string, req Request) {
	if s.Log == nil {
		return
	}
	s.Log.DebugContext(ctx, msg, "session_id", req.SessionID, "step", req.Step,
		"tools", len(req.Tools), "messages", len(req.Messages))
}

// SetStep replaces step i of the script, for a test that learns what a
// step must say only after the server started (a path, a pid).
func (s *Server) SetStep(i int, st Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenario[i] = st
}
