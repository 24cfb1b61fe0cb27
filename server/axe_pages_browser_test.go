package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserAxeSessionExtras runs axe-core (WCAG 2 A and AA, light and
// dark) over the pages around a session: its files (the tree, a file
// highlighted, the file's diff), the delete confirmation and the page
// after a delete, and, on a phone,
// the sessions drawer and the keyboard help overlay open.
func TestBrowserAxeSessionExtras(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Writing files.", ToolName: "Bash", ToolInput: map[string]any{"description": "write",
			"command": "mkdir -p src && printf 'package main\\n\\n// main says hello.\\nfunc main() { println(\"hi\", 42) }\\n' > src/main.go && printf 'one\\nTWO\\n' > a.txt"}},
		{Text: "Done writing."},
		{Text: "Done again."}, // the second session
	}, envOptions{quiet: true})
	e.useRepo(gitRepo(t))
	// Deleting a session is the project owner's (issue 32 item 5).
	if err := e.st.SetMember(t.Context(), e.project.ID, e.user.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "write some files", chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery))
	sessions, err := e.st.ListSessions(t.Context(), e.project.ID)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions = %v, %v", sessions, err)
	}
	sp := "/sessions/" + sessions[0].ID
	visitAndCheck(t, ctx, e.web.URL, []axePage{
		{"session files", sp + "/files", "#files-list"},
		{"session files (folder)", sp + "/files?path=src", "#files-list"},
		{"session file (highlighted)", sp + "/files/view?path=src/main.go", "#file-content .chroma"},
		{"session file diff", sp + "/files/diff?path=src/main.go", "#file-patch"},
		{"session delete confirmation", sp + "/delete", "#session-delete-form"},
	})
	step(t, ctx, "delete it", jsClick(`#session-delete-form button[type="submit"]`), chromedp.WaitVisible(`#deleted-title`, chromedp.ByID))
	checkAxe(t, ctx, "session deleted")
	startSession(t, ctx, e.web.URL, "write some more", chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery))
	var here string
	step(t, ctx, "its address", chromedp.Location(&here))
	sp = strings.TrimPrefix(here, e.web.URL)

	step(t, ctx, "the session on a phone, its drawer open",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(e.web.URL+sp),
		chromedp.WaitVisible(`#sidebar-toggle`, chromedp.ByID),
		chromedp.Evaluate(dismissPrompts, nil),
		chromedp.Click(`#sidebar-toggle`, chromedp.ByID),
		chromedp.WaitVisible(`#sidebar`, chromedp.ByID),
	)
	checkAxe(t, ctx, "sessions drawer (phone)")
	step(t, ctx, "close the drawer, open the help overlay",
		chromedp.KeyEvent("\x1b"),
		chromedp.WaitNotVisible(`#sidebar`, chromedp.ByID),
		chromedp.KeyEvent("?"),
		chromedp.WaitVisible(`#nav-help`, chromedp.ByID),
	)
	checkAxe(t, ctx, "keyboard help overlay")
}
