package server

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"parley/limit"
)

const (
	// maxWSInput is the most of one browser message Parley reads into
	// memory: a prompt or an answer (each at most maxPromptBytes of text)
	// with room for JSON's escapes. A longer message is read past and
	// refused with an error frame; the socket stays open.
	maxWSInput = 1 << 20
	// maxWSFrame bounds one message on the wire. Past it the connection
	// is closed (1009): that is no page, and the page reconnects anyway.
	maxWSFrame = 16 << 20
)

// errInvalidUTF8 refuses text that is not valid UTF-8 (or JSON escapes of
// a lone UTF-16 surrogate): Parley never replaces what was sent.
var errInvalidUTF8 = badRequest("That message is not valid UTF-8 text, so Parley did not send it: remove the broken characters and send it again.")

// readInput reads the next message of the page. tooBig is the size of a
// message over maxWSInput, which was read past and not kept.
func readInput(conn *websocket.Conn) (data []byte, tooBig int64, err error) {
	_, r, err := conn.NextReader()
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, maxWSInput+1))
	if err != nil {
		return nil, 0, err
	}
	if n <= maxWSInput {
		return buf.Bytes(), 0, nil
	}
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, 0, err
	}
	return nil, n + rest, nil
}

// errTooBig says that a message of n bytes is over limit, in the words the
// page uses when it refuses one before sending.
func errTooBig(n, limit int64) error {
	return badRequest(fmt.Sprintf("This message is %s; the limit is %s.", sizeText(n), sizeText(limit)))
}

// sizeText writes n bytes as the page does (limit.TextSize).
func sizeText(n int64) string { return limit.TextSize(n) }

// checkUTF8 refuses a JSON message whose bytes are not valid UTF-8 or whose
// strings escape a lone surrogate ("\udc00"): encoding/json would quietly
// turn either into U+FFFD.
func checkUTF8(data []byte) error {
	if !utf8.Valid(data) || loneSurrogate(data) {
		return errInvalidUTF8
	}
	return nil
}

// loneSurrogate reports whether JSON text holds a \u escape of a UTF-16
// surrogate that is not half of a pair.
func loneSurrogate(data []byte) bool {
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			continue
		}
		if data[i+1] != 'u' {
			i++ // an escaped character, maybe a backslash
			continue
		}
		r, ok := hex4(data, i+2)
		switch {
		case !ok:
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			lo, ok := hex4(data, i+8)
			if i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' || !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
		i += 5
	}
	return false
}

// hex4 reads four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
