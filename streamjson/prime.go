package streamjson

import (
	"encoding/json"
	"strings"
)

// A prime turn readies a process started ahead of its first message
// (docs/instant.md): Parley writes it a turn whose model request the
// model gateway answers itself, never forwarding it, then rewinds the
// conversation to before it (NewRewind). The CLI has then done its whole
// first-turn work, and the model is never sent a word of it.

// PrimeText is the prime turn's prompt. The model never sees it; it stays
// only in the CLI's transcript file, on a branch the rewind left.
const PrimeText = "(Parley readies this process before its first message; this turn is rewound and never reaches the model.)"

// PrimeMessagePrefix starts the id of the message the gateway answers a
// prime turn with. Model message ids come from the API ("msg_…"), so a
// transcript entry with this prefix is a prime's answer, never Claude's.
const PrimeMessagePrefix = "msg_parley_prime_"

// IsPrimeAnswer reports whether message (a transcript entry's or a stdout
// line's "message") is the gateway's answer to a prime turn.
func IsPrimeAnswer(message json.RawMessage) bool {
	var m struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(message, &m) == nil && strings.HasPrefix(m.ID, PrimeMessagePrefix)
}
