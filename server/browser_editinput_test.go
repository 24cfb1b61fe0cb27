package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// A member edits a Write call's input on its permission card (here both
// the path and the content) and allows it: the CLI runs the edited call.
func TestBrowserAllowsWithEditedInput(t *testing.T) {
	sc := fakeapi.Scenario{
		{Text: "Writing.", ToolName: "Write", ToolInput: map[string]any{"file_path": "/nonexistent-parley/notes.txt", "content": "from the model\n"}},
		{Text: "Wrote: " + fakeapi.ToolResultPlaceholder},
	}
	e := newEnv(t, sc, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	target := filepath.Join(e.workspace(s), "notes.txt")
	edited, _ := json.Marshal(map[string]any{"file_path": target, "content": "edited by a person\n"})
	var outcome string
	step(t, ctx, "open the session and prompt",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		chromedp.WaitVisible(`#prompt`, chromedp.ByID),
		chromedp.SendKeys(`#prompt`, "write notes", chromedp.ByID),
		chromedp.Click(`#prompt-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask[data-kind="permission"] details.ask-edit summary`, chromedp.ByQuery),
	)
	step(t, ctx, "edit the input, then allow",
		chromedp.Click(`.ask[data-kind="permission"] details.ask-edit summary`, chromedp.ByQuery),
		chromedp.SetValue(`.ask[data-kind="permission"] textarea[name="input"]`, string(edited), chromedp.ByQuery),
		jsClick(`.ask[data-kind="permission"] button[data-decision="allow"]`),
		chromedp.WaitVisible(`.ask-outcome.ask-answered`, chromedp.ByQuery),
		chromedp.Text(`.ask-outcome.ask-answered`, &outcome, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("events").innerText.includes("Wrote: ")`, nil, chromedp.WithPollingTimeout(60*time.Second)),
	)
	if !strings.Contains(outcome, "with the input changed to") || !strings.Contains(outcome, "edited by a person") {
		t.Errorf("card outcome = %q", outcome)
	}
	got, err := os.ReadFile(target)
	if err != nil || string(got) != "edited by a person\n" {
		t.Errorf("%s = %q, %v; want the edited content", target, got, err)
	}
	if _, err := os.Stat("/nonexistent-parley/notes.txt"); err == nil {
		t.Error("the model's original path was written")
	}
	if text, isErr := e.lastToolResult(2); isErr || !strings.Contains(text, target) {
		t.Errorf("model read %q (error %v), want the edited path", text, isErr)
	}
}
