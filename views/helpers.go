// Package views holds Parley's templ components: pure functions of data.
package views

import "strconv"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func optID(askID string, i int) string { return "ask-" + askID + "-opt-" + strconv.Itoa(i) }

// statusText is a session status in words.
func statusText(status string) string {
	switch status {
	case "running":
		return "Claude is working"
	case "waiting":
		return "waiting for you"
	case "failed":
		return "failed"
	case "ended":
		return "ended"
	default:
		return "idle"
	}
}
