package askuser

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/limit"
)

// TestClientReadsTheLargestAnswer: the relay client reads whole any answer
// the server may send: free text at limit.TextBytes, the limit of an
// answer on every surface, written by JSON as six-byte escapes, and the
// labels of a question as large as the relay takes. Before, the client cut
// the response at 256 KiB: a 900 KiB answer the server had accepted reached
// the model as "ask_user could not reach the user".
func TestClientReadsTheLargestAnswer(t *testing.T) {
	label := strings.Repeat("a", maxQuestionBytes/3) // the client escapes no letter: the question fits
	q := Single(Question{Question: "Which?", Options: []Option{{Label: label}, {Label: "other"}}})
	want := Answer{Status: StatusAnswered, AnsweredBy: "ann",
		Replies: []Reply{{Selected: []string{label}, Text: strings.Repeat("<", limit.TextBytes-len(label))}}}
	c := NewClient(relayServer(t, &fakeAsker{answer: want}))
	got, err := c.Ask(t.Context(), q)
	if err != nil {
		t.Fatalf("an answer of %d bytes of text: %v", limit.TextBytes, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer cut short: got %d bytes of text, want %d", len(got.Replies[0].Text), len(want.Replies[0].Text))
	}
}
