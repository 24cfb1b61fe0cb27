package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserAnswersEveryKind answers a permission, a plan and an
// AskUserQuestion from the page, in one session, and checks what the model
// read each time.
func TestBrowserAnswersEveryKind(t *testing.T) {
	plan := map[string]any{"plan": "# Release plan\n\n1. Tag **v2**\n2. Announce it"}
	sc := fakeapi.Scenario{
		{Text: "First, a plan.", ToolName: "ExitPlanMode", ToolInput: plan},
		{ToolName: "Bash", ToolInput: map[string]any{"command": "touch released"}},
		{ToolName: "AskUserQuestion", ToolInput: auqInput},
		{Text: "All set: " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true})
	s := e.newSession()
	e.setMode(s, "plan")
	ctx := e.browser(t)
	shots := artefactDir(t)
	var png []byte
	step(t, ctx, "open the session and prompt",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(`#prompt`, chromedp.ByID),
		chromedp.SendKeys(`#prompt`, "release it", chromedp.ByID),
		chromedp.Click(`#prompt-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask[data-kind="plan"] .ask-plan h1`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(shots, "plan.png"), png, 0o644)
	step(t, ctx, "approve the plan, asking before edits",
		jsClick(`.ask[data-kind="plan"] button[data-decision="approve"]`),
		chromedp.WaitVisible(`.ask[data-kind="permission"] .ask-code`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(shots, "permission.png"), png, 0o644)
	if got, _ := e.lastToolResult(2); got != "User has approved exiting plan mode. You can now proceed." {
		t.Errorf("model read %q after the plan", got)
	}
	step(t, ctx, "edit the command, then allow",
		chromedp.Click(`.ask[data-kind="permission"] details.ask-edit summary`, chromedp.ByQuery),
		chromedp.SetValue(`.ask[data-kind="permission"] textarea[name="command"]`, "touch released-edited", chromedp.ByQuery),
		jsClick(`.ask[data-kind="permission"] button[data-decision="allow"]`),
		chromedp.WaitVisible(`.ask[data-kind="question"] input[value="Blue"]`, chromedp.ByQuery),
	)
	if _, err := os.Stat(filepath.Join(e.workspace(s), "released-edited")); err != nil {
		t.Errorf("the edited command did not run: %v", err)
	}
	var title string
	step(t, ctx, "answer Claude's questions",
		chromedp.Click(`.ask[data-kind="question"] input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Click(`.ask[data-kind="question"] input[value="M"]`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&png),
		chromedp.Title(&title),
		jsClick(`.ask[data-kind="question"] button[data-decision="answer"]`),
		chromedp.Poll(`document.getElementById("events").innerText.includes("All set: Your questions have been answered")`, nil,
			chromedp.WithPollingTimeout(60*time.Second)),
	)
	_ = os.WriteFile(filepath.Join(shots, "question.png"), png, 0o644)
	if !strings.HasPrefix(title, "(1) ") {
		t.Errorf("tab title with an ask pending = %q, want it to start with (1)", title)
	}
	want := `Your questions have been answered: "Which colour?"="Blue", "Which sizes?"="M". You can now continue with these answers in mind.`
	if got, _ := e.lastToolResult(4); got != want {
		t.Errorf("model read %q, want %q", got, want)
	}
}

// jsClick clicks a button by script: the sticky composer may cover it at
// the bottom of the window, where a pointer click would land on the composer.
func jsClick(sel string) chromedp.Action {
	return chromedp.Evaluate(`document.querySelector(`+strconv.Quote(sel)+`).click()`, nil)
}
