//go:build bench

package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// traceMCPAsk wraps the relay's handler so that, at /mcp-ask, every ask_user
// `tools/call` and its result append a line to dir/<key>.trace in
// traceStdio's format, so BenchmarkAskLatency reads both transports alike;
// the key is the run's ask token's (askTokenKey), since the CLI does not
// name its session to an HTTP MCP server (2.1.328 sends no session header),
// and linkHTTPTraces gives each file its session's name. The timestamps:
//
//   - in: the request's body has been read whole, before the MCP handler
//     sees it (traceStdio: the line read from stdin);
//   - out: the result with that id has been written and flushed to the
//     connection, after any progress events of the same SSE stream
//     (traceStdio: the line written to stdout).
//
// Both are the moments the ask_user server itself receives the call and
// hands its result to the CLI, one an `mcp-askuser` child and the other
// Parley's own handler, so the two transports' figures compare like for
// like; neither counts the CLI's own time to write or read.
func traceMCPAsk(tb testing.TB, dir string) func(http.Handler) http.Handler {
	traces := &httpTraces{tb: tb, dir: dir, byKey: map[string]*askTrace{}}
	tb.Cleanup(traces.close)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/mcp-ask" || r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(r.Body)
			at := time.Now()
			if err != nil {
				http.Error(w, "read body", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			tr := traces.of(askTokenKey(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
			tr.request(at, body)
			tw := &traceResponse{ResponseWriter: w, tr: tr}
			next.ServeHTTP(tw, r)
			tw.FlushError() // a JSON (not SSE) response is complete now
		})
	}
}

// httpTraces holds one trace file per run's ask token.
type httpTraces struct {
	tb    testing.TB
	dir   string
	mu    sync.Mutex
	byKey map[string]*askTrace
}

func (h *httpTraces) of(key string) *askTrace {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.byKey[key]; ok {
		return t
	}
	f, err := os.OpenFile(filepath.Join(h.dir, key+".trace"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		h.tb.Errorf("ask trace: %v", err)
		f, _ = os.Open(os.DevNull)
	}
	t := &askTrace{f: f, open: map[string]bool{}}
	h.byKey[key] = t
	return t
}

func (h *httpTraces) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.byKey {
		t.f.Close()
	}
}

// traceResponse collects the JSON-RPC messages written to an /mcp-ask
// response (SSE `data:` lines, or a JSON body) and hands them to its trace
// once a flush has put them on the connection.
type traceResponse struct {
	http.ResponseWriter
	tr      *askTrace
	lines   lineSplitter
	json    bytes.Buffer // a JSON body, written until the handler returns
	written [][]byte     // messages written since the last flush
}

func (w *traceResponse) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.json.Write(p[:n])
		return n, err
	}
	w.lines.feed(p[:n], func(l []byte) {
		if msg, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			w.written = append(w.written, bytes.Clone(bytes.TrimSpace(msg)))
		}
	})
	return n, err
}

// FlushError flushes to the connection, then stamps what was written: the
// MCP SDK flushes through http.ResponseController after every event.
func (w *traceResponse) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	at := time.Now()
	if w.json.Len() > 0 {
		w.written = append(w.written, bytes.Clone(w.json.Bytes()))
		w.json.Reset()
	}
	for _, msg := range w.written {
		w.tr.response(at, msg)
	}
	w.written = w.written[:0]
	return err
}

// Flush is FlushError for callers that assert http.Flusher.
func (w *traceResponse) Flush() { w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's other controls.
func (w *traceResponse) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// askTokenKey names a run's trace file after its ask token without writing
// the token itself to disk.
func askTokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "token-" + hex.EncodeToString(sum[:8])
}

// linkHTTPTraces gives each client's /mcp-ask trace the name readTrace
// looks for, <claude session id>.trace (a hard link, so the handler goes on
// appending to it), by reading the run's ask token from its live run's
// --mcp-config file. Call it while every run is live.
func linkHTTPTraces(e *env, clients []*askClient, dir string) error {
	for _, c := range clients {
		r, ok := e.sup.Live(c.sess.ID)
		if !ok {
			return fmt.Errorf("session %s: no live run to read the ask token of", c.sess.ID)
		}
		token, err := mcpConfigToken(r.Spec().MCPConfigPath)
		if err != nil {
			return fmt.Errorf("session %s: %w", c.sess.ID, err)
		}
		from := filepath.Join(dir, askTokenKey(token)+".trace")
		if err := os.Link(from, filepath.Join(dir, c.sess.ClaudeSessionID+".trace")); err != nil {
			return fmt.Errorf("session %s: its first ask was not traced at /mcp-ask: %w", c.sess.ID, err)
		}
	}
	return nil
}

// mcpConfigToken reads the bearer token out of a run's --mcp-config file
// (runner's askHTTPConfig).
func mcpConfigToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read mcp config: %w", err)
	}
	var c struct {
		MCPServers map[string]struct {
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("read mcp config: %w", err)
	}
	token, ok := strings.CutPrefix(c.MCPServers["parley"].Headers["Authorization"], "Bearer ")
	if !ok || token == "" {
		return "", errors.New("mcp config has no bearer token: is the run on the http transport?")
	}
	return token, nil
}

// TestTraceMCPAskStampsTheResult: over an SSE response, traceMCPAsk stamps
// the call when its body has been read and its end when the result with
// that id is flushed, not at the progress event before it nor when the
// handler returns.
func TestTraceMCPAskStampsTheResult(t *testing.T) {
	dir := t.TempDir()
	var handlerIn, resultWrite, released time.Time
	clientRead := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlerIn = time.Now()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(data string) {
			io.WriteString(w, "event: message\ndata: "+data+"\n\n")
			http.NewResponseController(w).Flush()
		}
		event(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
		time.Sleep(50 * time.Millisecond)
		resultWrite = time.Now()
		event(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
		<-clientRead // the client has the result: the handler is still running
		released = time.Now()
	})
	srv := httptest.NewServer(traceMCPAsk(t, dir)(h))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/mcp-ask", strings.NewReader(
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_user","arguments":{}}}`))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("no result on the stream: %v", err)
		}
		if strings.Contains(line, `"id":7`) {
			break
		}
	}
	close(clientRead)
	io.Copy(io.Discard, rd)
	resp.Body.Close()
	in, out, err := readTrace(filepath.Join(dir, askTokenKey("tok")+".trace"))
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].id != "7" || in[0].at.After(handlerIn) {
		t.Fatalf("in = %+v, want id 7 stamped by %v", in, handlerIn)
	}
	if len(out) != 1 || out["7"].Before(resultWrite) || out["7"].After(released) {
		t.Fatalf("out = %v, want id 7 stamped between the result's write at %v and the handler's end at %v",
			out, resultWrite, released)
	}
}
