package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// errBadUTF8 refuses text that is not valid Unicode: JSON decoding would
// replace it with U+FFFD, so what Claude got would not be what was typed.
var errBadUTF8 = badRequest("That text is not valid UTF-8 (or holds a lone surrogate), so Parley cannot send it as it is: paste it again as plain text.")

// parseWSMessage decodes one message from a page. It refuses, with a
// sentence for the member, a message that is not a JSON object, holds a
// NUL (Postgres cannot store it) or invalid Unicode (it would be changed
// silently). What it returns holds only valid UTF-8 without NULs.
func parseWSMessage(data []byte) (wsMessage, error) {
	if !utf8.Valid(data) {
		return wsMessage{}, errBadUTF8
	}
	if err := checkNoNUL(data); err != nil {
		return wsMessage{}, err
	}
	var m wsMessage
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return wsMessage{}, errUnreadable
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return wsMessage{}, errUnreadable
	}
	if hasLoneSurrogate(data) {
		return wsMessage{}, errBadUTF8
	}
	m.raw = data
	return m, nil
}

// errUnreadable answers a message that is not what a Parley page sends.
var errUnreadable = badRequest("Parley could not read that message from the page; reload and try again.")

// hasLoneSurrogate reports whether a JSON text escapes a UTF-16 surrogate
// that is not part of a pair ("\ud800" alone): decoding turns it into
// U+FFFD. A valid pair is a high surrogate escape right before a low one.
func hasLoneSurrogate(data []byte) bool {
	s := string(data)
	for {
		i := strings.Index(s, `\u`)
		if i < 0 {
			return false
		}
		// An escaped backslash ("\\u") is not an escape: count them.
		n := 0
		for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		s = s[i+2:]
		if n%2 == 1 || len(s) < 4 {
			continue
		}
		hi := surrogate(s[:4])
		switch hi {
		case 'H':
			if len(s) >= 10 && s[4:6] == `\u` && surrogate(s[6:10]) == 'L' {
				s = s[10:]
				continue
			}
			return true
		case 'L':
			return true
		}
	}
}

// surrogate classes four hex digits: 'H' a high surrogate, 'L' a low one,
// 0 anything else.
func surrogate(hex string) byte {
	h := strings.ToLower(hex)
	if h[0] != 'd' {
		return 0
	}
	switch h[1] {
	case '8', '9', 'a', 'b':
		return 'H'
	case 'c', 'd', 'e', 'f':
		return 'L'
	}
	return 0
}
