package streamjson

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"parley/safefile"
)

// TestEachLine: the bounded reader hands every non-blank line with its
// number, skips a line too long (saying so), hands a torn last line before
// the read error, and stops when told.
func TestEachLine(t *testing.T) {
	long := strings.Repeat("x", MaxTranscriptLine+1)
	in := strings.Join([]string{`{"a":1}`, "", long, `{"b":2}`, `{"torn`}, "\n")
	var got []string
	var skipped []int
	read := func(n int, line []byte) bool {
		got = append(got, string(line))
		return true
	}
	boom := errors.New("boom")
	err := EachLine(io.MultiReader(strings.NewReader(in), iotest.ErrReader(boom)), read, func(n int, err error) {
		if errors.Is(err, safefile.ErrLineTooLong) {
			skipped = append(skipped, n)
		}
	})
	if !errors.Is(err, boom) {
		t.Errorf("EachLine = %v, want the read error", err)
	}
	if d := cmp.Diff([]string{`{"a":1}`, `{"b":2}`, `{"torn`}, trim(got)); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{3}, skipped); d != "" {
		t.Errorf("skipped (-want +got):\n%s", d)
	}

	got = nil
	err = EachLine(strings.NewReader(`{"a":1}`+"\n"+`{"b":2}`+"\n"), func(n int, line []byte) bool {
		got = append(got, string(line))
		return false
	}, nil)
	if err != nil || len(got) != 1 {
		t.Errorf("EachLine after stop: %v, %d lines; want nil, 1", err, len(got))
	}
}

// trim drops each line's newline, whichever way the reader hands it.
func trim(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, "\n")
	}
	return out
}
