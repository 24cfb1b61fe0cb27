package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserAxeSessionPage runs axe-core (WCAG 2 A and AA, light and dark)
// over a session page in each state it has: idle, an ask card of each kind
// (a plan, a permission, Claude's questions, a form of questions), a reply
// streaming in, the finished turn with its tool cards and code, the "/"
// command list open, a file attached in the composer; and
// over the inbox while an ask waits there.
func TestBrowserAxeSessionPage(t *testing.T) {
	form := map[string]any{"title": "New service", "questions": []any{
		map[string]any{"question": "Name?", "type": "text", "placeholder": "billing"},
		map[string]any{"question": "Public?", "type": "yes_no"},
		map[string]any{"question": "Notes?", "type": "text", "required": false},
	}}
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Let me check.", ToolName: "Bash", ToolInput: map[string]any{"command": "touch released", "description": "Mark it released"}},
		{ToolName: "AskUserQuestion", ToolInput: auqInput},
		{ToolName: "mcp__parley__ask_user_questions", ToolInput: form},
		{Text: "Released. Here is the change:\n\n```go\nfunc main() { fmt.Println(\"v2\") }\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAll done.",
			Chunks: 12, ChunkDelay: 400 * time.Millisecond},
		// The second session, in plan mode.
		{Text: "First, a plan.", ToolName: "ExitPlanMode", ToolInput: map[string]any{"plan": "# Release plan\n\n1. Tag **v2**\n2. Announce it"}},
	}, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	step(t, ctx, "open the idle session",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(`#prompt`, chromedp.ByID),
	)
	checkAxe(t, ctx, "session (idle)")
	checkFocusRings(t, ctx, "session (idle)", 40)

	step(t, ctx, "prompt; the permission ask arrives",
		chromedp.SendKeys(`#prompt`, "release it", chromedp.ByID),
		chromedp.Click(`#prompt-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask[data-kind="permission"] .ask-code`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (permission ask)")

	step(t, ctx, "allow; the questions arrive",
		jsClick(`.ask[data-kind="permission"] button[data-decision="allow"]`),
		chromedp.WaitVisible(`.ask[data-kind="question"] input[value="Blue"]`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (question ask)")
	step(t, ctx, "the inbox with the ask waiting",
		chromedp.Navigate(e.web.URL+"/inbox"),
		chromedp.WaitVisible(`.inbox-item .ask input[value="Blue"]`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "inbox (an ask waiting)")
	step(t, ctx, "back to the session",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(`.ask[data-kind="question"] input[value="Blue"]`, chromedp.ByQuery),
	)

	step(t, ctx, "answer; the form arrives",
		chromedp.Click(`.ask[data-kind="question"] input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Click(`.ask[data-kind="question"] input[value="M"]`, chromedp.ByQuery),
		jsClick(`.ask[data-kind="question"] button[data-decision="answer"]`),
		chromedp.WaitVisible(`.ask textarea[placeholder="billing"]`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (form ask)")

	step(t, ctx, "fill the form; the reply streams",
		chromedp.SetValue(`.ask textarea[placeholder="billing"]`, "billing", chromedp.ByQuery),
		jsClick(`.ask:has(textarea[placeholder="billing"]) input[value="Yes"]`),
		jsClick(`.ask:has(textarea[placeholder="billing"]) button[data-decision="answer"]`),
		chromedp.WaitVisible(`.assistant.live`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (streaming)")

	step(t, ctx, "the turn ends",
		chromedp.Poll(`document.getElementById("events").innerText.includes("All done.") && !document.querySelector(".assistant.live")`, nil,
			chromedp.WithPollingTimeout(60*time.Second)),
	)
	checkAxe(t, ctx, "session (completed, with tool cards and code)")
	step(t, ctx, "type / for the command list",
		chromedp.SendKeys(`#prompt`, "/", chromedp.ByID),
		chromedp.WaitVisible(`#slash-list li`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (the / command list open)")

	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("a note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "attach a file (not sent)",
		chromedp.Evaluate(`document.getElementById("prompt").value = ""`, nil),
		chromedp.SetUploadFiles(`#attach-input`, []string{notes}, chromedp.ByID),
		pollJS(`document.querySelector('#attach-chips li[data-id]') !== null`),
	)
	checkAxe(t, ctx, "session (a file attached in the composer)")

	plan := e.newSession()
	e.setMode(plan, "plan")
	step(t, ctx, "a session in plan mode: the plan ask",
		chromedp.Navigate(e.web.URL+"/sessions/"+plan.ID),
		chromedp.WaitVisible(`#prompt`, chromedp.ByID),
		chromedp.SendKeys(`#prompt`, "plan the release", chromedp.ByID),
		chromedp.Click(`#prompt-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask[data-kind="plan"] .ask-plan h1`, chromedp.ByQuery),
	)
	checkAxe(t, ctx, "session (plan ask)")
}
