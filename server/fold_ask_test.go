package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// TestMessageFoldedIntoAnAskTurnEndsRunning: a message sent while
// ask_user waits for its answer is folded by the CLI (claude 2.1.328) into
// the running turn: the model request after the answer carries it, and
// the CLI prints one result for both (runner/fold_test.go). The session is
// then completed, not "running", and the next message is not marked
// queued.
func TestMessageFoldedIntoAnAskTurnEndsRunning(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: twoColours()},
		{Text: "Green it is."},
		{Text: "Next one done."},
	}, envOptions{quiet: true})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.pendingAsk(sess.ID)
	w.prompt("and make it quick")
	w.waitFor(30*time.Second, "and make it quick")
	w.answer(in, map[string]any{"choice": "Green"})
	w.waitFor(60*time.Second, "Green it is.")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := e.fake.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if last := e.fake.Requests()[1].Messages; !strings.Contains(lastText(last), "and make it quick") {
		t.Fatalf("the request after the answer does not carry the message: %q", lastText(last))
	}
	waitUntil(t, 10*time.Second, "the session completed after the only result", func() bool {
		s, err := e.st.GetSession(t.Context(), sess.ID)
		return err == nil && s.Status == "completed"
	})
	w.prompt("next")
	w.waitFor(60*time.Second, "Next one done.")
	var queued bool
	e.queryRow(`SELECT coalesce((payload->>'queued')::bool, false) FROM events
		WHERE session_id = $1 AND type = 'prompt' AND payload->>'text' = 'next'`, []any{sess.ID}, &queued)
	if queued {
		t.Error("the message sent after the reply is marked queued")
	}
}

// lastText is the text of the last message of a model request.
func lastText(ms []fakeapi.Message) string {
	var b strings.Builder
	for _, bl := range ms[len(ms)-1].Content {
		b.WriteString(bl.Text)
	}
	return b.String()
}
