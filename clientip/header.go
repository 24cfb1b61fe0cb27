package clientip

import (
	"net/http"
	"strings"
)

// xForwardedFor lists the hops of every X-Forwarded-For line, in order
// ("client, proxy1, proxy2"); has is false when the header is absent.
func xForwardedFor(h http.Header) (hops []string, has bool) {
	lines := h.Values("X-Forwarded-For")
	for _, l := range lines {
		for _, f := range strings.Split(l, ",") {
			hops = append(hops, strings.TrimSpace(f))
		}
	}
	return hops, len(lines) > 0
}

// forwardedFor lists the for= node of each element of every Forwarded
// line (RFC 7239 §4: "Forwarded: for=192.0.2.43, for=\"[2001:db8:cafe::17]:4711\"").
// An element with no for= is a hop that did not say who sent it: its node
// is "" (no address).
func forwardedFor(h http.Header) (hops []string, has bool) {
	lines := h.Values("Forwarded")
	for _, l := range lines {
		for _, elem := range splitQuoted(l, ',') {
			hops = append(hops, forNode(elem))
		}
	}
	return hops, len(lines) > 0
}

// forNode is the value of an element's for= pair, unquoted; "" if none.
// RFC 7239 §4: "forwarded-pair = token "=" value" and parameter names are
// case-insensitive; a value is a token or a quoted-string.
func forNode(elem string) string {
	for _, pair := range splitQuoted(elem, ';') {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			return unquote(strings.TrimSpace(v))
		}
	}
	return ""
}

// splitQuoted splits s at sep outside double-quoted strings.
func splitQuoted(s string, sep byte) []string {
	var out []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quoted:
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote reads a quoted-string (RFC 7230 §3.2.6, with quoted-pair); a
// token is returned as it is, and an unterminated quote as "" (garbage).
func unquote(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	if len(v) < 2 || !strings.HasSuffix(v, `"`) {
		return ""
	}
	var b strings.Builder
	inner := v[1 : len(v)-1]
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String()
}
