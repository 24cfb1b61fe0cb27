package server

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"parley/launch"
	"parley/runner/fakeapi"
)

// plantFiles is what the fake model's Bash writes in the session's
// worktree: a Go file, a changed a.txt, a binary, and links a browser
// must never be served through: one to /etc/passwd, one to /etc, one to
// another project's secret; a FIFO, and a 2 MB text file.
const plantFiles = "mkdir -p src && printf 'package main\\n\\nfunc main() {}\\n' > src/main.go && " +
	"printf 'one\\nTWO\\nthree\\n' > a.txt && printf 'GIF89a\\000\\001\\002\\377' > blob.bin && " +
	"ln -s /etc/passwd passwd && ln -s /etc etcdir && ln -s \"$OTHER_SECRET\" theirs && mkfifo pipe && " +
	"head -c 2000000 /dev/zero | tr '\\000' a > big.txt"

// The session page links to the worktree's files; the tree lists them and
// shows links as links; a file opens highlighted, with its diff against
// the base and a download that is byte for byte the file; and the links
// Claude planted (to /etc/passwd, through a link to /etc, to another
// project's secret) are refused: no page shows a byte of their targets.
func TestBrowserSessionFiles(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-OF-ANOTHER-PROJECT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, fakeapi.Scenario{
		{Text: "Writing files.", ToolName: "Bash", ToolInput: map[string]any{"command": strings.ReplaceAll(plantFiles, "$OTHER_SECRET", secret), "description": "write"}},
		{Text: "Done writing."},
	}, envOptions{quiet: true})
	e.useRepo(gitRepo(t))
	ctx := e.browser(t)
	startSession(t, ctx, e.web.URL, "write some files", chromedp.WaitVisible(`#events .turn-result`, chromedp.ByQuery))
	sessions, err := e.st.ListSessions(t.Context(), e.project.ID)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions = %v, %v", sessions, err)
	}
	sess := sessions[0]
	dir := launch.WorktreeDir(e.dataDir, e.project.ID, sess.ID)
	if fi, err := os.Lstat(filepath.Join(dir, "passwd")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the run planted no link: %v", err)
	}

	var list string
	var links int
	step(t, ctx, "open the files from the session page",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID),
		chromedp.WaitReady(`#session-files`, chromedp.ByID),
		// A DOM click: the session page's layout (sidebar, header menus)
		// is other pages' to arrange; what counts here is the link.
		chromedp.Evaluate(`document.getElementById('session-files').click()`, nil),
		chromedp.WaitVisible(`#files-list`, chromedp.ByID),
		chromedp.Text(`#files-list`, &list, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('#files-list tr[data-kind="link"] a').length`, &links),
	)
	for _, want := range []string{"src/", "a.txt", "blob.bin", "passwd", "→ /etc/passwd (link, not followed)", "etcdir", "→ /etc", secret, "pipe", "(a FIFO, not opened)", "big.txt"} {
		if !strings.Contains(list, want) {
			t.Errorf("the listing lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, ".git") || links != 0 {
		t.Errorf("the listing shows .git or links a link (%d):\n%s", links, list)
	}

	var code, html, patch string
	step(t, ctx, "open src/main.go, highlighted, and its diff",
		chromedp.Click(`#files-list a.files-dir`, chromedp.ByQuery),
		chromedp.WaitVisible(`#files-list tr[data-name="main.go"] a`, chromedp.ByQuery),
		chromedp.Click(`#files-list tr[data-name="main.go"] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`#file-content .chroma`, chromedp.ByQuery),
		chromedp.Text(`#file-content`, &code, chromedp.ByID),
		chromedp.InnerHTML(`#file-content`, &html, chromedp.ByID),
		chromedp.Click(`#file-diff`, chromedp.ByID),
		chromedp.WaitVisible(`#file-patch`, chromedp.ByID),
		chromedp.Text(`#file-patch`, &patch, chromedp.ByID),
	)
	if !strings.Contains(code, "func main() {}") || !strings.Contains(html, `class="kn"`) {
		t.Errorf("src/main.go is not shown highlighted:\n%s", html)
	}
	if !strings.Contains(patch, "+package main") || !strings.Contains(patch, "src/main.go") || strings.Contains(patch, "a.txt") {
		t.Errorf("the per-file diff:\n%s", patch)
	}

	// The binary file: a sentence and a download, byte for byte.
	downloads := t.TempDir()
	var binary string
	step(t, ctx, "download blob.bin",
		cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads),
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID+"/files/view?path=blob.bin"),
		chromedp.Text(`#file-binary`, &binary, chromedp.ByID),
		chromedp.Click(`#file-download`, chromedp.ByID),
	)
	if !strings.Contains(binary, "Binary file, 10 bytes") {
		t.Errorf("blob.bin shown as %q", binary)
	}
	resp := e.do(e.user, "GET", "/sessions/"+sess.ID+"/files/raw?path=blob.bin", nil)
	resp.Body.Close()
	for h, want := range map[string]string{"Content-Type": "application/octet-stream", "Content-Disposition": `attachment; filename=blob.bin`,
		"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox; default-src 'none'"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("download %s: %q, want %q", h, got, want)
		}
	}
	var big string
	step(t, ctx, "a large file is cut",
		chromedp.Navigate(e.web.URL+"/sessions/"+sess.ID+"/files/view?path=big.txt"),
		chromedp.Text(`#file-truncated`, &big, chromedp.ByID),
	)
	if !strings.Contains(big, "first 1.0 MiB of 1.9 MiB") {
		t.Errorf("big.txt: %q", big)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "blob.bin"))
	var got []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, err = os.ReadFile(filepath.Join(downloads, "blob.bin")); err == nil && len(got) == len(want) {
			break
		}
	}
	if string(got) != string(want) || len(want) != 10 {
		t.Errorf("downloaded %q, the file holds %q", got, want)
	}

	// The planted links: refused with a sentence, nothing of the target.
	for _, p := range []string{"/view?path=passwd", "/view?path=etcdir/passwd", "/raw?path=etcdir/passwd", "/view?path=theirs",
		"/raw?path=theirs", "?path=etcdir", "/view?path=../../../../../etc/passwd", "/raw?path=/etc/passwd",
		"/view?path=pipe", "/raw?path=pipe"} {
		u := "/sessions/" + sess.ID + "/files" + p
		var body string
		step(t, ctx, "refuse "+p, chromedp.Navigate(e.web.URL+u), chromedp.Text(`body`, &body, chromedp.ByQuery))
		if strings.Contains(body, "root:x:0:0") || strings.Contains(body, "TOP-SECRET") ||
			!strings.Contains(body, "symbolic link") && !strings.Contains(body, "not a path") && !strings.Contains(body, "not a regular file") {
			t.Errorf("%s shows:\n%.600s", p, body)
		}
		resp := e.do(e.user, "GET", u, nil)
		raw, _ := io.ReadAll(resp.Body)
		b := string(raw)
		if resp.StatusCode != 404 && resp.StatusCode != 400 || strings.Contains(b, "root:x:0:0") || strings.Contains(b, "TOP-SECRET") {
			t.Errorf("GET %s: %d\n%.600s", p, resp.StatusCode, b)
		}
	}
	// The pages pass axe-core (WCAG 2 A and AA) in both themes.
	files := "/sessions/" + sess.ID + "/files"
	visitAndCheck(t, ctx, e.web.URL, []axePage{
		{"the files' top folder", files, "#files-list"},
		{"a file", files + "/view?path=src/main.go", "#file-content"},
		{"a file's diff", files + "/diff?path=src/main.go", "#file-patch"},
		{"a binary file", files + "/view?path=blob.bin", "#file-binary"},
	})
}
