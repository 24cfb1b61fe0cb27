package views

import (
	"context"
	"encoding/hex"
	"io"

	"github.com/a-h/templ"
)

// TextDelta appends streamed text to its own message's live block, named
// by id: never to another block that happens to be live too. It is the
// hottest fragment (one per streamed token), so it is written directly;
// the page's fast path (static/app.js) reads exactly this shape.
func TextDelta(msgID, text string) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, `<div hx-swap-oob="beforeend:#`+MessageDOMID(msgID)+` .body">`+templ.EscapeString(text)+`</div>`)
		return err
	})
}

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
