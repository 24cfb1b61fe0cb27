package hub

import (
	"bytes"
	"context"
	"slices"
	"strconv"

	"parley/views"
)

// presenceFrame renders who is viewing a session: each name once, in
// order, with the number of tabs when someone has several open.
func presenceFrame(names []string) Frame {
	slices.Sort(names)
	var shown []string
	for i := 0; i < len(names); {
		j := i
		for j < len(names) && names[j] == names[i] {
			j++
		}
		if n := j - i; n > 1 {
			shown = append(shown, names[i]+" ("+strconv.Itoa(n)+" tabs)")
		} else {
			shown = append(shown, names[i])
		}
		i = j
	}
	var buf bytes.Buffer
	_ = views.Presence(shown, true).Render(context.Background(), &buf)
	return Frame{Data: buf.Bytes()}
}
