package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// archivedSentence is how every surface refuses a prompt to an archived
// session.
const archivedSentence = "This session is archived"

// TestArchivedSessionRefusesPrompts: once a member archives a session, a
// prompt to it is refused with a sentence on every surface (the page's
// WebSocket, its retry, MCP send_message over HTTP and through
// `parley mcp`), and no claude starts for it. Restored, it takes prompts
// again.
func TestArchivedSessionRefusesPrompts(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "First answer."}, {Text: "Back at work."}}, envOptions{quiet: true})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("Start.")
	w.waitFor(60*time.Second, "First answer.", "Done ·")
	if res := e.post("/sessions/"+sess.ID+"/archive", url.Values{"archived": {"1"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %s", res.Status)
	}
	w = e.dial(sess.ID, 0) // the archive reloads the page
	w.prompt("Go on, though it is archived.")
	w.waitFor(30*time.Second, archivedSentence)
	w.send(map[string]any{"action": "retry"})
	w.waitFor(30*time.Second, archivedSentence)

	token := e.apiToken(e.user)
	args := map[string]any{"sessionId": sess.ID, "message": "Go on over MCP."}
	callErr(t, e.mcpClient(token, "", nil), "send_message", args, archivedSentence)
	callErr(t, e.mcpStdio(token, "", nil), "send_message", args, archivedSentence)

	if n := len(e.fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want only the one from before the archive", n)
	}
	if _, live := e.sup.Live(sess.ID); live {
		t.Error("an archived session has a live run")
	}

	// Restored, the session takes prompts again.
	if res := e.post("/sessions/"+sess.ID+"/archive", url.Values{"archived": {"0"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("restore: %s", res.Status)
	}
	w.prompt("Go on now.")
	w.waitFor(60*time.Second, "Back at work.")
}

// TestArchivedSessionRefusesAnswers: an answer to an ask that was pending
// when the session was archived would resume Claude to deliver it, which
// is continuing the session: it is refused with the same sentence from
// the page, MCP respond and `parley asks answer`, and the ask stays
// pending for when the session is restored.
func TestArchivedSessionRefusesAnswers(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me ask.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Thanks, carrying on."},
		{Text: "Thanks, carrying on."},
	}, envOptions{quiet: true})
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("pick a colour")
	in := e.waitInput(w, sess.ID)
	e.waitTranscript(sess, askTool)
	if res := e.post("/sessions/"+sess.ID+"/archive", url.Values{"archived": {"1"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %s", res.Status)
	}
	w = e.dial(sess.ID, 0)
	w.answer(in, map[string]any{"choice": "Blue"})
	w.waitFor(30*time.Second, archivedSentence)
	callErr(t, e.mcpClient(e.apiToken(e.user), "", nil), "respond",
		map[string]any{"sessionId": sess.ID, "inputId": in.ID, "decision": "allow", "answers": map[string]any{"Which colour?": "Blue"}}, archivedSentence)
	if out, err := runAsks(t, e.listenForTerminals(t), "answer", in.ID, "--choice", "Blue"); err == nil || !strings.Contains(err.Error(), archivedSentence) {
		t.Errorf("parley asks answer: %q, %v; want the refusal", out, err)
	}
	// (Stopping the run may let the CLI send the ask's cancelled result
	// on its way out; no request carries the answer.)
	for _, r := range e.fake.Requests() {
		if strings.Contains(string(r.Raw), "User selected: Blue") {
			t.Errorf("the answer reached the model of an archived session: %.300s", r.LastUserText())
		}
	}
	if _, live := e.sup.Live(sess.ID); live {
		t.Error("an archived session has a live run")
	}
	if got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "pending" {
		t.Fatalf("the refused answer left the ask %q, want pending", got.Status)
	}
	// Restored, the answer goes through and Claude carries on.
	if res := e.post("/sessions/"+sess.ID+"/archive", url.Values{"archived": {"0"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("restore: %s", res.Status)
	}
	// The stop above may have let the CLI's last request take the reply
	// "Thanks, carrying on." already (the script has it twice): wait for
	// the request that carries the answer and for the ask to be answered,
	// not for the text.
	w = e.dial(sess.ID, 0)
	w.answer(in, map[string]any{"choice": "Blue"})
	deadline := time.Now().Add(60 * time.Second)
	for !answerReachedModel(e) {
		if time.Now().After(deadline) {
			t.Fatal("the answer given after the restore never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for got, _ := e.st.GetInput(t.Context(), in.ID); got.Status != "answered"; got, _ = e.st.GetInput(t.Context(), in.ID) {
		if time.Now().After(deadline) {
			t.Fatalf("the ask is %q after the restored answer, want answered", got.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.waitFor(60*time.Second, "Thanks, carrying on.")
}

// answerReachedModel says a request to the model carries the answer Blue.
func answerReachedModel(e *env) bool {
	for _, r := range e.fake.Requests() {
		if strings.Contains(string(r.Raw), "User selected: Blue") {
			return true
		}
	}
	return false
}
