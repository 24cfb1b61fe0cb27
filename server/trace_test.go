package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// askTraceEnv names the directory where the test binary, running as
// `parley mcp-askuser`, timestamps its ask_user traffic (BenchmarkAskLatency).
const askTraceEnv = "PARLEY_ASK_TRACE"

// traceStdio returns in and out unchanged unless $PARLEY_ASK_TRACE is set;
// then it wraps them so that every ask_user `tools/call` request read from in
// and its response written to out append a line to
// $PARLEY_ASK_TRACE/$CLAUDE_CODE_SESSION_ID.trace:
//
//	in <unix nanoseconds> <JSON-RPC id>
//	out <unix nanoseconds> <JSON-RPC id>
//
// The claude CLI puts its session id in CLAUDE_CODE_SESSION_ID in the MCP
// server's environment, which maps the file to the Parley session.
func traceStdio(in io.ReadCloser, out io.WriteCloser) (io.ReadCloser, io.WriteCloser) {
	dir := os.Getenv(askTraceEnv)
	if dir == "" {
		return in, out
	}
	name := os.Getenv("CLAUDE_CODE_SESSION_ID")
	if name == "" {
		name = "pid-" + strconv.Itoa(os.Getpid())
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".trace"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-askuser: ask trace:", err)
		return in, out
	}
	tr := &askTrace{f: f, open: map[string]bool{}}
	return &traceReader{rc: in, tr: tr}, &traceWriter{wc: out, tr: tr}
}

// askTrace records ask_user calls and their results. Reads and writes run
// on different goroutines of the MCP transport, hence the mutex.
type askTrace struct {
	mu   sync.Mutex
	f    *os.File
	open map[string]bool // ids of ask_user calls not yet answered
}

// request notes line if it is an ask_user tools/call.
func (t *askTrace) request(at time.Time, line []byte) {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return // skip decoding the other traffic
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "tools/call" || m.Params.Name != "ask_user" || len(m.ID) == 0 {
		return
	}
	id := string(m.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open[id] = true
	fmt.Fprintf(t.f, "in %d %s\n", at.UnixNano(), id)
}

// response notes line if it answers an open ask_user call.
func (t *askTrace) response(at time.Time, line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 {
		return // a request or notification of the server's own
	}
	id := string(m.ID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.open[id] {
		return
	}
	delete(t.open, id)
	fmt.Fprintf(t.f, "out %d %s\n", at.UnixNano(), id)
}

// lineSplitter cuts a byte stream into newline-terminated lines.
type lineSplitter struct{ partial []byte }

func (s *lineSplitter) feed(p []byte, line func([]byte)) {
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.partial = append(s.partial, p...)
			return
		}
		if len(s.partial) > 0 {
			s.partial = append(s.partial, p[:i]...)
			line(s.partial)
			s.partial = s.partial[:0]
		} else {
			line(p[:i])
		}
		p = p[i+1:]
	}
}

// traceReader timestamps a request when the read that completes its line
// returns, before the MCP server sees it.
type traceReader struct {
	rc    io.ReadCloser
	tr    *askTrace
	lines lineSplitter
}

func (r *traceReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	at := time.Now()
	r.lines.feed(p[:n], func(l []byte) { r.tr.request(at, l) })
	return n, err
}

func (r *traceReader) Close() error { return r.rc.Close() }

// traceWriter timestamps a response once its write to stdout has returned.
type traceWriter struct {
	wc    io.WriteCloser
	tr    *askTrace
	lines lineSplitter
}

func (w *traceWriter) Write(p []byte) (int, error) {
	n, err := w.wc.Write(p)
	at := time.Now()
	w.lines.feed(p[:n], func(l []byte) { w.tr.response(at, l) })
	return n, err
}

func (w *traceWriter) Close() error { return w.wc.Close() }
