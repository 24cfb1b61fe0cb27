package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// browser starts a headless Chromium for the test.
func browser(t testing.TB) context.Context {
	t.Helper()
	bin := os.Getenv("PARLEY_CHROMIUM_BIN")
	if bin == "" {
		if p, err := exec.LookPath("chromium"); err == nil {
			bin = p
		}
	}
	if bin == "" {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("chromium not found: set PARLEY_CHROMIUM_BIN (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("chromium not found")
	}
	// Not t.TempDir: Chromium's helpers may still write to the profile
	// just after the browser exits, and a failed RemoveAll would fail the
	// test. Removal is best effort.
	profile, err := os.MkdirTemp("", "parley-chromium-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1200, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// step runs browser actions with a deadline and fails the test with a
// screenshot of the page when they do not complete.
func step(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		var png []byte
		var html string
		shot, cancel2 := context.WithTimeout(ctx, 5*time.Second)
		_ = chromedp.Run(shot, chromedp.CaptureScreenshot(&png), chromedp.OuterHTML("body", &html))
		cancel2()
		path := filepath.Join(artefactDir(t), "failure.png")
		_ = os.WriteFile(path, png, 0o644)
		t.Fatalf("%s: %v\nscreenshot: %s\npage:\n%s", what, err, path, html)
	}
}

// artefactDir is where a test keeps screenshots: $PARLEY_ARTEFACTS or a temp dir.
func artefactDir(t testing.TB) string {
	dir := os.Getenv("PARLEY_ARTEFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBrowserAnswersAskAfterReload(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{
		{Text: "I need a decision.", ToolName: askTool, ToolInput: colourQuestion(false)},
		{Text: "Final reply: you chose " + fakeapi.ToolResultPlaceholder, Chunks: 3},
	}, envOptions{})
	ctx := e.browser(t)
	var url string
	step(t, ctx, "start a session from the project page",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.SendKeys(`#new-prompt`, "Please pick a colour for the button", chromedp.ByID),
		chromedp.Submit(`#new-prompt`, chromedp.ByID),
		chromedp.WaitVisible(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.Location(&url),
	)
	if !strings.Contains(url, "/sessions/") {
		t.Fatalf("after starting, the browser is at %s", url)
	}
	var text string
	step(t, ctx, "reload with the ask pending",
		chromedp.Reload(),
		chromedp.WaitVisible(`.ask input[value="Green"]`, chromedp.ByQuery),
		chromedp.Text(`#events`, &text, chromedp.ByID),
	)
	for _, want := range []string{"Please pick a colour for the button", "I need a decision.", "Which colour?", "Calm", "Loud"} {
		if !strings.Contains(text, want) {
			t.Errorf("after reload the transcript lacks %q:\n%s", want, text)
		}
	}
	var png []byte
	step(t, ctx, "answer in the card",
		chromedp.Click(`.ask input[value="Blue"]`, chromedp.ByQuery),
		chromedp.CaptureScreenshot(&png),
		chromedp.Click(`.ask button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.ask-outcome.ask-answered`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("events").innerText.includes("Final reply: you chose User selected: Blue")`, nil),
		chromedp.Text(`#events`, &text, chromedp.ByID),
	)
	_ = os.WriteFile(filepath.Join(artefactDir(t), "ask-pending.png"), png, 0o644)
	if !strings.Contains(text, "You answered: Blue") {
		t.Errorf("the card does not say what was answered:\n%s", text)
	}
	if got, _ := e.lastToolResult(2); got != "User selected: Blue" {
		t.Errorf("model received %q", got)
	}
}

// pollAcross polls expr until it gives a truthy value, into res. A poll that
// runs while a document goes away (a form posted, a redirect followed)
// loses its execution context ("Cannot find context with specified id"):
// it polls again in the new one.
func pollAcross(expr string, res any) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for i := 0; ; i++ {
			err := chromedp.Poll(expr, res, chromedp.WithPollingTimeout(30*time.Second)).Do(ctx)
			if err == nil || i == 5 || !strings.Contains(err.Error(), "context with specified id") {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
