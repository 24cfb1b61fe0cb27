package connect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"parley/reach"
	"parley/reach/webpush"
)

// TestPayloadOfFitsWhatTheModelWrites: the model writes the question, its
// options and the tool input; whatever it writes, a push's payload fits
// webpush.MaxPayload, keeps its token, answer URL and action IDs (what
// answers), and is made at once. Before the fix, options of 3000
// characters made payloadOf loop for ever on a body of "…".
func TestPayloadOfFitsWhatTheModelWrites(t *testing.T) {
	long := strings.Repeat("<\"é", 70_000) // JSON writes '<' as six bytes
	base := reach.Message{Type: reach.TypeAsk, InputID: "in-1", Kind: "question", Title: "Claude asks in P",
		URL: "https://parley.example.com/sessions/s#ask-in-1", Token: strings.Repeat("t", 43),
		AnswerURL: "https://parley.example.com/reach/answer"}
	cases := map[string]func(m *reach.Message){
		"a 200 KB question": func(m *reach.Message) { m.Body = long },
		"huge option labels": func(m *reach.Message) {
			m.Body = "Which?"
			m.Actions = []reach.Action{{ID: "choice:0", Title: long}, {ID: "choice:1", Title: long}}
		},
		"option labels of '<'": func(m *reach.Message) {
			lt := strings.Repeat("<", 100_000)
			m.Body = lt
			m.Actions = []reach.Action{{ID: "choice:0", Title: lt}, {ID: "choice:1", Title: lt}}
		},
		"huge everything": func(m *reach.Message) {
			m.Body, m.Title, m.Session, m.Project = long, long, long, long
			m.Actions = []reach.Action{{ID: "choice:0", Title: long}, {ID: "choice:1", Title: long}}
		},
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			m := base
			set(&m)
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { defer close(done); b, err = payloadOf(m) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("payloadOf did not return within 5 s")
			}
			if err != nil {
				t.Fatalf("payloadOf: %v", err)
			}
			if len(b) > webpush.MaxPayload {
				t.Fatalf("payload of %d bytes, at most %d fit", len(b), webpush.MaxPayload)
			}
			var got reach.Message
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Token != m.Token || got.AnswerURL != m.AnswerURL || got.URL != m.URL || len(got.Actions) != len(m.Actions) {
				t.Errorf("payload lost what answers: %+v", got)
			}
			for i, a := range got.Actions {
				if a.ID != m.Actions[i].ID || a.Title == "" {
					t.Errorf("action %d = %+v, want id %s with a title", i, a, m.Actions[i].ID)
				}
			}
		})
	}
}
