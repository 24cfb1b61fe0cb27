package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Postgres text and jsonb cannot hold a NUL character, so a prompt, answer
// or form value with one could be sent to Claude and then fail to be
// recorded. Parley refuses it up front, on every path, with a sentence.
var errNUL = badRequest("That text contains a NUL character (\\0), which Parley cannot store: remove it and send it again.")

// refuseNUL refuses a request whose query or URL-encoded form carries a
// NUL: encoded, a NUL is "%00" (a literal "%00" typed by someone is sent as
// "%2500"), or a raw zero byte. It also refuses one whose values, decoded,
// are not valid UTF-8 (Go would keep the bytes, Postgres refuse them, and
// a later step replace them): 400 with a sentence, never a quiet U+FFFD.
// The body is already bounded by limit.Body.
func refuseNUL(s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasEncodedNUL(r.URL.RawQuery) {
			s.fail(w, r, errNUL)
			return
		}
		if !validFormText(r.URL.RawQuery) {
			s.fail(w, r, errInvalidUTF8)
			return
		}
		if r.Body != nil && r.Body != http.NoBody && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				s.fail(w, r, badRequest("The form could not be read; reload the page and try again."))
				return
			}
			if hasEncodedNUL(string(b)) {
				s.fail(w, r, errNUL)
				return
			}
			if !validFormText(string(b)) {
				s.fail(w, r, errInvalidUTF8)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		next.ServeHTTP(w, r)
	})
}

// validFormText reports whether every key and value of a URL-encoded form
// is valid UTF-8 once decoded.
func validFormText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	if !strings.Contains(s, "%") {
		return true
	}
	vs, _ := url.ParseQuery(s) // what parses is checked; a bad escape is the handler's to refuse
	for k, list := range vs {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range list {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

func hasEncodedNUL(s string) bool {
	return strings.Contains(s, "%00") || strings.IndexByte(s, 0) >= 0
}

// checkNoNUL refuses a WebSocket message (a prompt, an answer) with a NUL
// in any of its strings; JSON can carry one as "\u0000".
func checkNoNUL(data []byte) error {
	if !bytes.Contains(data, []byte(`\u0000`)) {
		return nil // the only way JSON spells a NUL
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return badRequest("Parley could not read that message from the page; reload and try again.")
	}
	if containsNUL(v) {
		return errNUL
	}
	return nil
}

func containsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, x := range v {
			if containsNUL(x) {
				return true
			}
		}
	case map[string]any:
		for k, x := range v {
			if strings.IndexByte(k, 0) >= 0 || containsNUL(x) {
				return true
			}
		}
	}
	return false
}
