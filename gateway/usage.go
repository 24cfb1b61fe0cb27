package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxUsageLine bounds the SSE line or JSON body head scanned for usage;
// longer lines count only toward the output estimate.
const maxUsageLine = 64 << 10

// usageTail is how much of a JSON body's end is kept: the Messages API
// puts usage last, after the content, which may be longer than the head.
const usageTail = 8 << 10

// countUsage wraps the upstream response so its usage is counted and
// priced as it streams by; the request is recorded, and charged to its
// session and project, when the body is closed.
func (g *Gateway) countUsage(resp *http.Response, gr granted) error {
	if g.sink == nil {
		return nil
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	// Only a successful message costs money; count_tokens and errors do not.
	// resp.Request is the request sent upstream: its path ends in the
	// client's (forwarded allows exactly /v1/messages there) after the
	// upstream's base path, if it has one (a proxy at /anthropic).
	charged := resp.StatusCode == http.StatusOK && strings.HasSuffix(resp.Request.URL.Path, "/v1/messages")
	resp.Body = &usageReader{rc: resp.Body, sse: sse, done: func(t tokens, complete bool) {
		u := Usage{Requests: 1, InputTokens: t.input + t.cacheWrite + t.cacheRead, OutputTokens: t.output, SessionID: gr.sessionID}
		if charged {
			if !complete && !sse {
				t.output = max(t.output, gr.rq.maxTokens) // usage unreadable: the worst case
			}
			u.CostUSD = rateOf(gr.rq.model).cost(t)
		}
		g.record(gr.projectID, u)
	}}
	return nil
}

// usageReader passes the body through unchanged while reading the usage
// the Messages API reports: message_start's message.usage and
// message_delta's running totals in a stream, or the usage object of a
// JSON body.
type usageReader struct {
	rc     io.ReadCloser
	sse    bool
	line   []byte
	tail   []byte // a JSON body's last usageTail bytes
	big    bool   // the JSON body outgrew line
	t      tokens
	final  bool  // a stream's message_delta usage was seen
	deltas int64 // bytes of content_block_delta events
	closed bool
	done   func(t tokens, complete bool)
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.scan(p[:n])
	return n, err
}

func (r *usageReader) Close() error {
	if !r.closed {
		r.closed = true
		complete := true
		switch {
		case r.sse && !r.final:
			// A stream cut before its final usage (the client went away,
			// say): its output is estimated from the deltas that passed,
			// about four bytes a token, so cutting a stream short does
			// not make it free.
			r.t.output = max(r.t.output, r.deltas/4)
		case !r.sse && !r.big:
			complete = r.parse(r.line)
		case !r.sse:
			complete = r.parseTail()
		}
		r.done(r.t, complete)
	}
	return r.rc.Close()
}

// scan collects lines (SSE) or the body's head and tail (JSON), bounded.
func (r *usageReader) scan(b []byte) {
	if !r.sse {
		if !r.big && len(r.line)+len(b) <= maxUsageLine {
			r.line = append(r.line, b...)
		} else {
			r.big = true
		}
		r.tail = append(r.tail, b...)
		if len(r.tail) > usageTail {
			r.tail = append(r.tail[:0], r.tail[len(r.tail)-usageTail:]...)
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
	} else {
		r.deltas += int64(len(b)) // too long to read: counted as output
	}
}

// parse reads the usage of one SSE data object or JSON body; false if it
// holds none.
func (r *usageReader) parse(data []byte) bool {
	if bytes.Contains(data, []byte(`"content_block_delta"`)) {
		r.deltas += int64(len(data))
		return false
	}
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	var v struct {
		Type    string     `json:"type"`
		Usage   *usageJSON `json:"usage"`
		Message struct {
			Usage *usageJSON `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	switch {
	case v.Type == "message_start" && v.Message.Usage != nil:
		r.t = v.Message.Usage.tokens()
	case v.Type == "message_delta" && v.Usage != nil:
		// message_delta's counts are running totals of the message.
		r.final = true
		d := v.Usage.tokens()
		r.t.output = d.output
		r.t.input, r.t.cacheRead = max(r.t.input, d.input), max(r.t.cacheRead, d.cacheRead)
		r.t.cacheWrite, r.t.cacheWrite1h = max(r.t.cacheWrite, d.cacheWrite), max(r.t.cacheWrite1h, d.cacheWrite1h)
		r.t.webSearches = max(r.t.webSearches, d.webSearches)
	case v.Usage != nil: // a JSON (non-streamed) message
		r.t = v.Usage.tokens()
	default:
		return false
	}
	return true
}

// parseTail reads the usage object at the end of a JSON body too long to
// keep whole.
func (r *usageReader) parseTail() bool {
	i := bytes.LastIndex(r.tail, []byte(`"usage"`))
	if i < 0 {
		return false
	}
	rest := bytes.TrimLeft(r.tail[i+len(`"usage"`):], " \t\r\n")
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return false
	}
	var u usageJSON
	if json.NewDecoder(bytes.NewReader(rest)).Decode(&u) != nil {
		return false
	}
	r.t = u.tokens()
	return true
}

type usageJSON struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		OneHour int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	ServerToolUse struct {
		WebSearchRequests int64 `json:"web_search_requests"`
	} `json:"server_tool_use"`
}

func (u *usageJSON) tokens() tokens {
	return tokens{input: u.InputTokens, cacheWrite: u.CacheCreationInputTokens, cacheWrite1h: u.CacheCreation.OneHour,
		cacheRead: u.CacheReadInputTokens, output: u.OutputTokens, webSearches: u.ServerToolUse.WebSearchRequests}
}
