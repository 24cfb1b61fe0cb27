package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"parley/launch"
	"parley/runner/fakeapi"
)

// TestBrowserFilesPaging: a folder of 1,234 entries (more than a page)
// shows its first page with a count, and "Show more", reached and pressed
// from the keyboard, appends the next entries (htmx) and moves the focus
// to the first of them, until every entry has been shown once, in order:
// folders first, then by name. The page passes axe-core.
func TestBrowserFilesPaging(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	sess := e.newSession()
	ws, err := launch.SyncWorkspace(e.dataDir, e.project)
	if err != nil {
		t.Fatal(err)
	}
	many := filepath.Join(ws, "many")
	var want []string
	for i := range 34 {
		name := fmt.Sprintf("d%04d", i)
		if err := os.MkdirAll(filepath.Join(many, name), 0o755); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	for i := range 1200 {
		name := fmt.Sprintf("f%04d", i)
		if err := os.WriteFile(filepath.Join(many, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	ctx := e.browser(t)
	const rowsJS = `Array.from(document.querySelectorAll('#files-list tbody tr')).map(r => r.dataset.name)`
	const moreJS = `(document.getElementById('files-more') || {textContent: ''}).textContent.replace(/\s+/g, ' ').trim()`
	var rows []string
	var more string
	step(t, ctx, "open a folder of 1,234 entries",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID+"/files?path=many"),
		chromedp.WaitVisible(`#files-list`, chromedp.ByID),
		chromedp.Evaluate(rowsJS, &rows),
		chromedp.Evaluate(moreJS, &more),
	)
	checkAxe(t, ctx, "a folder of more than a page")
	if len(rows) != 200 || !strings.Contains(more, "Showing 200 of 1,234") {
		t.Errorf("first page: %d rows, count %q; want 200 and \"Showing 200 of 1,234\"", len(rows), more)
	}
	for page := 2; ; page++ {
		var hasMore bool
		step(t, ctx, "look for Show more", chromedp.Evaluate(`!!document.querySelector('#files-more a')`, &hasMore))
		if !hasMore {
			break
		}
		if page > 10 {
			t.Fatalf("still a Show more after %d pages", page)
		}
		n := len(rows)
		var focused string
		step(t, ctx, fmt.Sprintf("show page %d from the keyboard", page),
			chromedp.Focus(`#files-more a`, chromedp.ByQuery),
			chromedp.KeyEvent(kb.Enter),
			// Until htmx has settled: it moves the focus (autofocus on the
			// first new row) and binds the new Show more link in the same
			// step, 20 ms after the rows appear. Pressed before that, the
			// link is a plain link and the page navigates (CI, once).
			chromedp.Poll(fmt.Sprintf(`document.querySelectorAll('#files-list tbody tr').length > %d && !!document.activeElement.closest('#files-rows tr')`, n),
				nil, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Evaluate(rowsJS, &rows),
			chromedp.Evaluate(moreJS, &more),
			chromedp.Evaluate(`(document.activeElement.closest('tr') || {dataset: {}}).dataset.name || document.activeElement.tagName`, &focused),
		)
		if focused != rows[n] {
			t.Errorf("page %d: the focus is on %q; want the first new entry %q", page, focused, rows[n])
		}
		if wantMore := fmt.Sprintf("Showing %s of 1,234", commaInt(len(rows))); !strings.Contains(more, wantMore) {
			t.Errorf("page %d: count %q; want %q", page, more, wantMore)
		}
	}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("the entries shown, page after page (-want +got):\n%s", d)
	}
}

// commaInt is n with a comma between thousands.
func commaInt(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d,%03d", n/1000, n%1000)
}
