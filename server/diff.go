package server

import (
	"strings"

	"parley/views"
)

// maxDiffCells bounds the LCS table of one diff; larger changes are shown
// as the old lines removed and the new lines added.
const maxDiffCells = 250_000

// lineDiff is a line diff of old → new by longest common subsequence, with
// unchanged lines kept as context.
func lineDiff(old, new string) []views.DiffLine {
	a, b := splitLines(old), splitLines(new)
	if len(a)*len(b) > maxDiffCells {
		return append(ops('-', a), ops('+', b)...)
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []views.DiffLine
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, views.DiffLine{Op: ' ', Text: a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, views.DiffLine{Op: '-', Text: a[i]})
			i++
		default:
			out = append(out, views.DiffLine{Op: '+', Text: b[j]})
			j++
		}
	}
	return append(append(out, ops('-', a[i:])...), ops('+', b[j:])...)
}

func ops(op byte, lines []string) []views.DiffLine {
	out := make([]views.DiffLine, 0, len(lines))
	for _, l := range lines {
		out = append(out, views.DiffLine{Op: op, Text: l})
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
