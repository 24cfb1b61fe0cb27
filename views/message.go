package views

import "encoding/hex"

// MessageDOMID is the element id of an assistant message's block: "m-"
// and the message id, which fragments name in CSS selectors
// (#m-<id> .body). An id with any character other than a letter, a digit,
// "_" or "-" (the API's are msg_… ) is hex-encoded, so no selector or
// attribute can be broken by what the model's side sends.
func MessageDOMID(msgID string) string {
	for _, c := range msgID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "m-x" + hex.EncodeToString([]byte(msgID))
		}
	}
	return "m-" + msgID
}
