package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// prettyJSON indents a tool input for reading, clipped to maxShown.
func prettyJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return clip(string(raw))
	}
	return clip(buf.String())
}

// clip shortens s to maxShown bytes on a rune boundary and says so.
func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n… (" + humanBytes(len(s)-cut) + " more in the log)"
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return formatFloat(float64(n)/(1<<20)) + " MB"
	case n >= 1<<10:
		return formatFloat(float64(n)/(1<<10)) + " KB"
	}
	return itoa(n) + " bytes"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orSomeone(name string) string {
	if name == "" {
		return "someone"
	}
	return name
}

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func itoa(n int) string { return strconv.Itoa(n) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
