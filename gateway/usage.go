package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxUsageLine bounds the SSE line or JSON body scanned for usage; longer
// ones are passed through uncounted.
const maxUsageLine = 64 << 10

// countUsage wraps the upstream response so its usage is counted as it
// streams by; the request is recorded when the body is closed.
func (g *Gateway) countUsage(resp *http.Response, gr grant) error {
	if g.sink == nil {
		return nil
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &usageReader{rc: resp.Body, sse: sse, done: func(u Usage) { g.record(gr.projectID, u) }}
	return nil
}

// usageReader passes the body through unchanged while reading the usage
// the Messages API reports: message_start's message.usage.input_tokens and
// message_delta's usage.output_tokens in a stream, or the usage object of
// a JSON body.
type usageReader struct {
	rc     io.ReadCloser
	sse    bool
	line   []byte
	u      Usage
	closed bool
	done   func(Usage)
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.scan(p[:n])
	return n, err
}

func (r *usageReader) Close() error {
	if !r.closed {
		r.closed = true
		if !r.sse {
			r.parse(r.line)
		}
		r.u.Requests = 1
		r.done(r.u)
	}
	return r.rc.Close()
}

// scan collects lines (SSE) or the whole body (JSON), bounded.
func (r *usageReader) scan(b []byte) {
	if !r.sse {
		if len(r.line)+len(b) <= maxUsageLine {
			r.line = append(r.line, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.appendLine(b)
			return
		}
		r.appendLine(b[:i])
		if data, ok := bytes.CutPrefix(r.line, []byte("data:")); ok {
			r.parse(data)
		}
		r.line = r.line[:0]
		b = b[i+1:]
	}
}

func (r *usageReader) appendLine(b []byte) {
	if len(r.line)+len(b) <= maxUsageLine {
		r.line = append(r.line, b...)
	}
}

// parse reads the usage of one SSE data object or JSON body.
func (r *usageReader) parse(data []byte) {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	var v struct {
		Type    string     `json:"type"`
		Usage   *usageJSON `json:"usage"`
		Message struct {
			Usage *usageJSON `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &v) != nil {
		return
	}
	switch {
	case v.Type == "message_start" && v.Message.Usage != nil:
		r.u.InputTokens += v.Message.Usage.input()
		r.u.OutputTokens = v.Message.Usage.OutputTokens
	case v.Type == "message_delta" && v.Usage != nil:
		// message_delta's output_tokens is the running total of the message.
		r.u.OutputTokens = v.Usage.OutputTokens
	case v.Usage != nil: // a JSON (non-streamed) message
		r.u.InputTokens += v.Usage.input()
		r.u.OutputTokens += v.Usage.OutputTokens
	}
}

type usageJSON struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

func (u *usageJSON) input() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}
