package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"parley/limit"
	"parley/runner/fakeapi"
)

// TestPageCountsTextAsTheServerDoes types a prompt, then a refusal's
// reason, of exactly limit.TextBytes bytes: the page sends both, as the
// server accepts them; one byte more is refused in the page with the
// sentence. The page counts the text's UTF-8 bytes, not the JSON message
// around it (field names, ids, the edited command).
func TestPageCountsTextAsTheServerDoes(t *testing.T) {
	sc := fakeapi.Scenario{
		{ToolName: "Bash", ToolInput: map[string]any{"command": "touch denied"}},
		{Text: "Denied, as asked."},
	}
	e := newEnv(t, sc, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	over := fmt.Sprintf("This message is %s; the limit is %s.", limit.TextSize(limit.TextBytes+1), limit.TextSize(limit.TextBytes))
	var note string
	step(t, ctx, "a prompt one byte over the limit is refused in the page",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.Evaluate(fmt.Sprintf(`document.getElementById('prompt').value = 'x'.repeat(%d); true`, limit.TextBytes+1), nil),
		chromedp.Focus(`#prompt`, chromedp.ByID),
		pressEnter(0),
		chromedp.WaitVisible(`#prompt-note`, chromedp.ByID),
		chromedp.Text(`#prompt-note`, &note, chromedp.ByID))
	if note != over {
		t.Errorf("the page says %q, want %q", note, over)
	}
	step(t, ctx, "a prompt of exactly the limit is sent",
		chromedp.Evaluate(fmt.Sprintf(`document.getElementById('prompt').value = 'x'.repeat(%d); true`, limit.TextBytes), nil),
		chromedp.Focus(`#prompt`, chromedp.ByID),
		pressEnter(0),
		chromedp.WaitVisible(`.ask[data-kind="permission"] input[name="reason"]`, chromedp.ByQuery))
	if reqs := e.fake.Requests(); len(reqs) == 0 || len(reqs[0].LastUserText()) != limit.TextBytes {
		t.Errorf("the model did not get the %d-byte prompt", limit.TextBytes)
	}
	reason := `document.querySelector('.ask[data-kind="permission"] input[name="reason"]').value = 'y'.repeat(%d); true`
	step(t, ctx, "a reason one byte over the limit is refused in the page",
		chromedp.Evaluate(fmt.Sprintf(reason, limit.TextBytes+1), nil),
		jsClick(`.ask[data-kind="permission"] button[data-decision="deny"]`),
		pollJS(`(document.querySelector('.ask[data-kind="permission"] .ask-state') || {}).textContent === `+jsString(over)))
	step(t, ctx, "a reason of exactly the limit is sent and Claude goes on",
		chromedp.Evaluate(fmt.Sprintf(reason, limit.TextBytes), nil),
		jsClick(`.ask[data-kind="permission"] button[data-decision="deny"]`),
		pollJS(`document.getElementById('events').innerText.includes('Denied, as asked.')`))
	if got, _ := e.lastToolResult(2); !strings.Contains(got, strings.Repeat("y", 1000)) {
		t.Errorf("the model read %.200q after the denial, want the reason", got)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
