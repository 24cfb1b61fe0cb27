package server

import (
	"bytes"
	"encoding/json"
)

// parseWSMessage decodes one message from a page. It refuses, with a
// sentence for the member, a message that is not a JSON object, holds a
// NUL (Postgres cannot store it) or invalid Unicode (it would be changed
// silently). What it returns holds only valid UTF-8 without NULs.
func parseWSMessage(data []byte) (wsMessage, error) {
	if err := checkUTF8(data); err != nil {
		return wsMessage{}, err
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
	m.raw = data
	return m, nil
}

// errUnreadable answers a message that is not what a Parley page sends.
var errUnreadable = badRequest("Parley could not read that message from the page; reload and try again.")
