package limit

import "fmt"

// TextBytes bounds the text of one prompt and of one answer, wherever it
// comes from: the page (its WebSocket and its forms), the inbox, `parley
// asks` and MCP (create_session, send_message, respond). The page refuses
// a longer one before sending it (it reads the limit from the body's
// data-max-bytes); the server refuses it again with TooMuchText's
// sentence; the ask_user relay client reads any answer within it.
const TextBytes = 256 << 10

// TooMuchText is the sentence that refuses n bytes of text over
// TextBytes, in the words the page uses too (static/app.js).
func TooMuchText(n int64) string {
	return fmt.Sprintf("This message is %s; the limit is %s.", TextSize(n), TextSize(TextBytes))
}

// TextSize writes n bytes as KiB, rounded up so that a message just over
// the limit never reads as the limit, or MiB. Keep in step with
// static/app.js.
func TextSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", (n+1023)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
