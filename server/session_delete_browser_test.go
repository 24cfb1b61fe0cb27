package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// An owner deletes a worktree session after a run, from its page: the
// confirmation names the session, its worktree and its branch; afterwards
// no row names the session, the worktree, the branch and the CLI's
// transcript are gone, the audit trail says who, and a viewer who had the
// page open reads that the session was deleted, with a link back, and a
// reload says the same.
func TestBrowserSessionDelete(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Editing.", ToolName: "Bash", ToolInput: map[string]any{"command": "printf 'hello\\n' > b.txt", "description": "edit"}},
		{Text: "Done editing."},
	}, envOptions{quiet: true})
	repo := gitRepo(t)
	e.useRepo(repo)
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	viewer := e.member("viewer@example.com", "Vera Viewer", roleViewer)
	sess := e.newSession()
	w := e.dial(sess.ID, 0)
	w.prompt("edit the files")
	w.waitFor(60e9, "turn-result")
	e.waitTranscript(sess, "Done editing.")
	sess, _ = e.st.GetSession(t.Context(), sess.ID)
	dir := WorktreeDir(e.dataDir, e.project.ID, sess.ID)
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatalf("the run left no file in its worktree: %v", err)
	}
	if n := e.sessionRows(sess.ID); n["events"] == 0 || n["runs"] == 0 {
		t.Fatalf("rows before the delete: %v", n)
	}

	octx := browser(t)
	e.signInBrowser(t, octx, owner)
	// The viewer's tab, in the same Chromium: signed in on "localhost",
	// another cookie host than the owner's 127.0.0.1.
	vbase := strings.Replace(e.web.URL, "127.0.0.1", "localhost", 1)
	vctx, cancel := chromedp.NewContext(octx)
	t.Cleanup(cancel)
	if err := chromedp.Run(vctx); err != nil { // the tab, bound to vctx, not to a step's timeout
		t.Fatal(err)
	}
	step(t, vctx, "sign the viewer in", chromedp.ActionFunc(func(ctx context.Context) error {
		return network.SetCookie(sessionCookie, viewer.Cookie).WithURL(vbase).WithHTTPOnly(true).
			WithSameSite(network.CookieSameSiteLax).Do(ctx)
	}))
	step(t, vctx, "the viewer opens the session",
		chromedp.Navigate(vbase+"/sessions/"+sess.ID),
		chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery),
		chromedp.WaitVisible(`#conn[data-state="live"]`, chromedp.ByQuery),
	)
	var viewerLinks int
	step(t, vctx, "the viewer has no delete link", chromedp.Evaluate(`document.querySelectorAll("#session-delete").length`, &viewerLinks))
	if viewerLinks != 0 {
		t.Error("a viewer's page offers to delete the session")
	}

	var what, wtPath, branch string
	step(t, octx, "the owner asks to delete",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.WaitVisible(`#session-delete`, chromedp.ByID),
		chromedp.Click(`#session-delete`, chromedp.ByID),
		chromedp.WaitVisible(`#session-delete-form`, chromedp.ByID),
		chromedp.Text(`#delete-what`, &what, chromedp.ByID),
		chromedp.Text(`#delete-worktree`, &wtPath, chromedp.ByID),
		chromedp.Text(`#delete-branch`, &branch, chromedp.ByID),
	)
	if wtPath != dir || branch != "parley/"+sess.ID || !strings.Contains(what, "never merged") {
		t.Errorf("confirmation names worktree %q, branch %q:\n%s", wtPath, branch, what)
	}
	var done string
	step(t, octx, "the owner confirms",
		chromedp.Submit(`#session-delete-form`, chromedp.ByID),
		chromedp.WaitVisible(`#deleted-title`, chromedp.ByID),
		chromedp.Text(`main, body`, &done, chromedp.ByQuery),
	)
	if !strings.Contains(done, "Deleted “test”") || !strings.Contains(done, "worktree and branch are gone") {
		t.Errorf("after the delete the page says:\n%s", done)
	}

	var banner, back string
	step(t, vctx, "the viewer's page says the session is gone",
		chromedp.WaitVisible(`#session-gone-link`, chromedp.ByID),
		chromedp.Text(`#offline`, &banner, chromedp.ByID),
		chromedp.AttributeValue(`#session-gone-link`, "href", &back, nil, chromedp.ByID),
	)
	if !strings.Contains(banner, "This session was deleted.") || back != "/projects/"+pid(e)+"/history" {
		t.Errorf("viewer's banner %q, link %q", banner, back)
	}
	step(t, vctx, "a reload says it too",
		chromedp.Reload(),
		chromedp.WaitVisible(`.error-page`, chromedp.ByQuery),
		chromedp.Text(`.error-page`, &banner, chromedp.ByQuery),
	)
	if !strings.Contains(banner, "This session was deleted on") || !strings.Contains(banner, "by Olga Owner") {
		t.Errorf("the reloaded page says %q", banner)
	}

	e.wantSessionGone(sess, repo)
}
