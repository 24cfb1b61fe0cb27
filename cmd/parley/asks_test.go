package main

import (
	"encoding/json"
	"strings"
	"testing"

	"parley/store"
)

// `parley asks` lists the user's open asks from the database; an answer
// needs a running server, and says so when there is none.
func TestAsksCommand(t *testing.T) {
	c := newCLI(t)
	c.mustRun("long-password\n", "user", "add", "ann@example.com", "--name", "Ann")
	c.mustRun("long-password\n", "user", "add", "bob@example.com")
	c.mustRun("", "project", "add", "Shop", "--owner", "ann@example.com")
	st := c.store()
	ctx := t.Context()
	projects, _ := st.ListProjects(ctx)
	sess, err := st.CreateSession(ctx, projects[0].ID, "Checkout", "Ann")
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"kind": "question", "source": "ask_user",
		"form": map[string]any{"questions": []any{map[string]any{"question": "Which colour?",
			"options": []any{map[string]any{"label": "Blue"}, map[string]any{"label": "Red"}}}}}})
	in := store.Input{ID: "8a1d3f7e-2b4c-4d5e-9f60-718293a4b5c6", SessionID: sess.ID, Kind: "question", Payload: payload}
	if err := st.OpenInput(ctx, in, store.Event{SessionID: sess.ID, Seq: 1, Type: "input_requested", Payload: payload}); err != nil {
		t.Fatal(err)
	}

	out := c.mustRun("", "asks", "--user", "ann@example.com")
	for _, want := range []string{in.ID, "question", "Shop / Checkout", "1. Which colour? (one of: Blue, Red)", "an answer resumes the session"} {
		if !strings.Contains(out, want) {
			t.Errorf("parley asks lacks %q:\n%s", want, out)
		}
	}
	if out := c.mustRun("", "asks", "--user", "bob@example.com"); !strings.Contains(out, "Nothing is waiting for you.") {
		t.Errorf("bob, no member, sees:\n%s", out)
	}
	_, err = c.run("", "asks", "answer", in.ID[:6], "--user", "ann@example.com", "--choice", "Blue")
	if err == nil || !strings.Contains(err.Error(), "no Parley server is running") {
		t.Errorf("answer without a server: %v, want a clear error", err)
	}
	// One limit for a prompt and an answer (limit.TextBytes), refused
	// before anything is sent, in the server's and the page's words.
	_, err = c.run("", "asks", "answer", in.ID[:6], "--user", "ann@example.com", "--text", strings.Repeat("x", 300<<10))
	if want := "This message is 300 KiB; the limit is 256 KiB."; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a 300 KiB answer: %v, want %q", err, want)
	}
	if got, _ := st.GetInput(ctx, in.ID); got.Status != "pending" {
		t.Errorf("the ask is %q, want still pending", got.Status)
	}
	if _, err := c.run("", "asks"); err == nil || !strings.Contains(err.Error(), "--user") {
		t.Errorf("asks without a user: %v, want it to ask for --user", err)
	}
}
