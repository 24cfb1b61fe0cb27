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

// TestBrowserTeamFlow: an admin signs in through the login page, creates a
// project, adds a teammate on the settings page and starts a session; the
// teammate answers Claude's question from their own connection, and the
// admin's page shows the answer, by name, and Claude carrying on.
func TestBrowserTeamFlow(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Final reply: you chose " + fakeapi.ToolResultPlaceholder, Chunks: 3},
	}, envOptions{quiet: true})
	admin := e.addUser("ada@example.com", "Ada Admin", true)
	bea := e.addUser("bea@example.com", "Bea Member", false)
	ctx := browser(t)
	var loc string
	step(t, ctx, "sign in through the login page",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#email`, chromedp.ByID),
		chromedp.Location(&loc),
		chromedp.SendKeys(`#email`, admin.Email, chromedp.ByID),
		chromedp.SendKeys(`#password`, testPassword, chromedp.ByID),
		chromedp.Submit(`#password`, chromedp.ByID),
		chromedp.WaitVisible(`#project-name`, chromedp.ByID),
	)
	if !strings.Contains(loc, "/login?next=") {
		t.Errorf("signed out, / went to %s, not the login page", loc)
	}
	step(t, ctx, "create a project",
		chromedp.SendKeys(`#project-name`, "Rocket", chromedp.ByID),
		chromedp.Submit(`#project-name`, chromedp.ByID),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.Location(&loc),
	)
	projectURL := loc
	step(t, ctx, "add a teammate on the settings page",
		chromedp.Navigate(projectURL+"/settings"),
		chromedp.WaitVisible(`#member-email`, chromedp.ByID),
		chromedp.SendKeys(`#member-email`, bea.Email, chromedp.ByID),
		chromedp.Submit(`#member-email`, chromedp.ByID),
		chromedp.WaitVisible(`#member-`+strconv.FormatInt(bea.ID, 10), chromedp.ByID),
	)
	step(t, ctx, "start a session in the project",
		chromedp.Navigate(projectURL),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.SendKeys(`#new-prompt`, "Please pick a colour for the button", chromedp.ByID),
		chromedp.Submit(`#new-prompt`, chromedp.ByID),
		chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Location(&loc),
	)
	sid := loc[strings.LastIndex(loc, "/")+1:]
	in := func() string {
		ins, err := e.st.PendingInputs(t.Context(), sid)
		if err != nil || len(ins) != 1 {
			t.Fatalf("pending inputs %v, %v", ins, err)
		}
		return ins[0].ID
	}()
	w := e.dialAs(bea, sid, 0)
	w.send(map[string]any{"action": "answer", "input_id": in, "choice": "Blue"})
	var text string
	var png []byte
	step(t, ctx, "see the teammate's answer and Claude's reply",
		chromedp.Poll(`document.getElementById("events").innerText.includes("Final reply: you chose User selected: Blue")`, nil),
		chromedp.Text(`#events`, &text, chromedp.ByID),
		chromedp.CaptureScreenshot(&png),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "team-answer.png"), png, 0o644)
	for _, want := range []string{"Please pick a colour for the button", "Bea Member"} {
		if !strings.Contains(text, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, text)
		}
	}
	// A form rendered without the token (the history page's rename) gets it
	// from static/csrf.js.
	step(t, ctx, "rename the session on the history page",
		chromedp.Navigate(projectURL+"/history"),
		chromedp.WaitVisible(`#title-`+sid, chromedp.ByID),
		chromedp.SetValue(`#title-`+sid, "Colour decision", chromedp.ByID),
		chromedp.Submit(`#title-`+sid, chromedp.ByID),
	)
	for i := 0; ; i++ {
		sess, _ := e.st.GetSession(t.Context(), sid)
		if sess.Title == "Colour decision" {
			break
		}
		if i == 100 {
			t.Fatalf("title = %q after the rename", sess.Title)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The rename posts a form and the history page loads again: wait for
	// the new document, or the sign-out click can land on a node of the
	// old one ("No node with given id found").
	step(t, ctx, "history after the rename", pollAcross(`document.readyState === "complete" &&
		document.querySelector("#hist-`+sid+` .hist-main a")?.textContent === "Colour decision"`, nil))
	var header string
	step(t, ctx, "sign out", chromedp.Text(`header.top`, &header, chromedp.ByQuery),
		chromedp.Click(`.logout button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#email`, chromedp.ByID))
	if !strings.Contains(header, "Ada Admin") {
		t.Errorf("the header does not show who is signed in: %q", header)
	}
}
