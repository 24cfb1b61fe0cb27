package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func diffClass(op byte) string {
	switch op {
	case '+':
		return "d-add"
	case '-':
		return "d-del"
	}
	return "d-ctx"
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func floatAttr(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Money formats a cost in US dollars with the precision small turns need.
func Money(usd float64) string {
	if usd < 1 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// Tokens formats a token count compactly: 950, 12.3k, 4.1M.
func Tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatInt(n/1000, 10) + "k"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// Duration formats milliseconds for people: 0.8 s, 12 s, 3 min 4 s.
func Duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Minute:
		return strconv.FormatInt(int64(d.Seconds()), 10) + " s"
	}
	return fmt.Sprintf("%d min %d s", int64(d.Minutes()), int64(d.Seconds())%60)
}

// turnFigures is a turn's numbers in one line.
func turnFigures(t Turn) string {
	parts := []string{
		Money(t.CostUSD),
		Tokens(t.InputTokens) + " in / " + Tokens(t.OutputTokens) + " out tokens",
		strconv.Itoa(t.Turns) + " " + pluralWord(t.Turns, "turn", "turns"),
		Duration(t.DurationMS),
	}
	if t.Model != "" {
		parts = append(parts, t.Model)
	}
	return strings.Join(parts, " · ")
}

func historyURL(projectID int64) string {
	return "/projects/" + strconv.FormatInt(projectID, 10) + "/history"
}

// queueText says where a session waits for a free claude slot.
func queueText(place, of int) string {
	return "Waiting for a free slot, " + ordinal(place) + " in line (" + strconv.Itoa(of) +
		" waiting). Your message is sent as soon as Claude can start."
}

// ordinal writes 1 as "1st", 2 as "2nd", 11 as "11th".
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
