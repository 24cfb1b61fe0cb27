package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// saveDocShot keeps a screenshot with the test's artefacts and, when
// PARLEY_SCREENSHOTS_DIR is set, there too: the docs' pictures are
// regenerated with
//
//	PARLEY_SCREENSHOTS_DIR=$PWD/docs go test ./server -run TestBrowserPhoneLayoutAndAccessibility
//
// and a plain test run (CI) leaves the tree alone.
func saveDocShot(t testing.TB, name string, png []byte) {
	t.Helper()
	if len(png) < 1000 {
		t.Errorf("screenshot %s is empty (%d bytes)", name, len(png))
	}
	dirs := []string{artefactDir(t)}
	if d := os.Getenv("PARLEY_SCREENSHOTS_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docShots takes the look-and-feel pictures of docs/using.md from the
// session open at sessionURL (one with an ask pending): the session with
// its sidebar, the same in the dark theme, the phone's sessions drawer and
// the board. Viewport shots, not full pages, to keep the files small.
func docShots(t *testing.T, ctx context.Context, base, sessionURL string) {
	t.Helper()
	light := emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}})
	theme := func(v string) chromedp.Action {
		return chromedp.Evaluate(`localStorage.setItem("parley-theme", `+mustJSON(v)+`)`, nil)
	}
	shot := func(name string, actions ...chromedp.Action) {
		var png []byte
		actions = append(actions, chromedp.Evaluate(dismissPrompts, nil), chromedp.CaptureScreenshot(&png))
		step(t, ctx, "screenshot "+name, actions...)
		saveDocShot(t, name, png)
	}
	desktop := chromedp.EmulateViewport(1200, 820, chromedp.EmulateScale(1))
	shot("session-sidebar.png", light, desktop, theme("light"),
		chromedp.Navigate(sessionURL), chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery))
	shot("session-dark.png", theme("dark"), chromedp.Reload(), chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery))
	shot("board.png", theme("light"), chromedp.Navigate(base+"/"), chromedp.WaitVisible(`main h1`, chromedp.ByQuery))
	shot("session-drawer-390.png",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(sessionURL), chromedp.WaitVisible(`#events .ask`, chromedp.ByQuery),
		chromedp.Evaluate(dismissPrompts, nil),
		chromedp.Click(`#sidebar-toggle`, chromedp.ByID),
		chromedp.WaitVisible(`#sidebar`, chromedp.ByID),
	)
}
