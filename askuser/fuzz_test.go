package askuser

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeForm runs the ask_user_questions argument validator on any
// arguments a model could send. It never panics; an error names what is
// wrong; a form it accepts is within the contract's bounds and can be
// stored (no NUL, which Postgres refuses) and answered.
func FuzzDecodeForm(f *testing.F) {
	f.Add([]byte(`{"title":"Setup","questions":[{"id":"db","question":"Which database?","type":"single","options":[{"label":"Postgres"},{"label":"SQLite"}]},{"question":"Anything else?","required":false}]}`))
	f.Add([]byte(`{"questions":[{"question":"Ship it?","type":"yes_no"}],"timeout":30}`))
	f.Add([]byte(`{"questions":[]}`))
	f.Add([]byte(`{"questions":[{"question":"x","options":[{"label":"a"},{"label":" a"}]}]}`))
	f.Add([]byte(`{"questions":[{"question":"\u0000","id":"\u00e9"}],"extra":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"questions":[{"question":"a\u0000b","type":"yes_no"}]}`))
	f.Fuzz(func(t *testing.T, args []byte) {
		form, err := decodeForm(args)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if n := len(form.Questions); n < 1 || n > maxQuestions {
			t.Fatalf("accepted %d questions", n)
		}
		for i, q := range form.Questions {
			if n := len(q.Choices()); q.Kind() != TypeText && n < 2 {
				t.Fatalf("question %d: a %s question with %d choices", i+1, q.Kind(), n)
			}
			if len(q.Options) > maxOptions {
				t.Fatalf("question %d: %d options", i+1, len(q.Options))
			}
		}
		b, err := json.Marshal(form)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`\u0000`)) || !utf8.Valid(b) {
			t.Fatalf("accepted a form that cannot be stored: %s", b)
		}
		// Every required question answered with its first choice, or text.
		var replies []Reply
		for _, q := range form.Questions {
			if c := q.Choices(); len(c) > 0 {
				replies = append(replies, Reply{Selected: []string{c[0].Label}})
			} else {
				replies = append(replies, Reply{Text: "an answer"})
			}
		}
		if err := form.Check(replies); err != nil {
			t.Fatalf("a valid answer was refused: %v", err)
		}
		var ae *AnswerError
		if err := form.Check(append(replies, Reply{Text: "x"})); !errors.As(err, &ae) {
			t.Fatalf("an extra answer was not refused with a sentence: %v", err)
		}
	})
}
