package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"parley/streamjson"
)

// Priming: a process started ahead of its first message (a warm process,
// a resume ahead) is readied with a turn of its own, which the runner then
// rewinds away (streamjson.PrimeText, docs/instant.md). While its token is
// priming, the gateway answers that token's model traffic itself: a short
// text message whose id marks it (streamjson.PrimeMessagePrefix), no usage,
// nothing forwarded, charged, counted against a limit or waited on the
// lease for. The model never sees a prime, and nobody pays for it.

// Prime has the gateway answer token's requests itself until end is
// called. A token that is not live is left alone.
func (g *Gateway) Prime(token string) (end func()) {
	set := func(on bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if gr, ok := g.grants[token]; ok {
			gr.priming = on
			g.grants[token] = gr
		}
	}
	set(true)
	return func() { set(false) }
}

// maxPrimeBody bounds what is read of a prime's request: the CLI's first
// request with a resumed conversation can be large, and none of it is used.
const maxPrimeBody = maxRequestBytes

// answerPrime answers a priming token's request: the message the turn
// needs, a token count, or the connectivity probe's empty success.
func answerPrime(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPrimeBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "request_too_large", "The request is larger than 32 MB.", false)
		return
	}
	var rq struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &rq) // a probe or count has no model; the answer does without
	switch r.URL.Path {
	case "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens":0}`)
		return
	case "/v1/messages":
	default:
		w.WriteHeader(http.StatusOK)
		return
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := streamjson.PrimeMessagePrefix + hex.EncodeToString(b)
	usage := map[string]any{"input_tokens": 0, "output_tokens": 0}
	msg := map[string]any{"id": id, "type": "message", "role": "assistant", "model": rq.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}
	if !rq.Stream {
		msg["content"] = []any{map[string]any{"type": "text", "text": "ok"}}
		msg["stop_reason"] = "end_turn"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	event := func(typ string, data map[string]any) {
		data["type"] = typ
		j, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, j)
	}
	event("message_start", map[string]any{"message": msg})
	event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": "ok"}})
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 0}})
	event("message_stop", map[string]any{})
	if flusher != nil {
		flusher.Flush()
	}
}
