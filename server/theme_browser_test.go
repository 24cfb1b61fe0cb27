package server

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// box is an element's bounding box and the viewport's size, in CSS px.
type box struct {
	Left, Top, Right, Bottom float64
	W, H                     float64
	Hit                      bool // the element is what a click at its centre lands on
}

// boxOf reads sel's box; Hit says whether elementFromPoint at its centre is
// sel or inside it (nothing covers it).
func boxOf(sel string, out *box) chromedp.Action {
	return chromedp.Evaluate(`(() => { const el = document.querySelector(`+mustJSON(sel)+`); const r = el.getBoundingClientRect();
		const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
		return {Left: r.left, Top: r.top, Right: r.right, Bottom: r.bottom, W: innerWidth, H: innerHeight, Hit: !!at && el.contains(at)}; })()`, out)
}

// signOutReachable opens path at the phone size in ctx and checks that the
// page does not scroll sideways and that, the Menu opened, Sign out lies
// wholly inside the viewport where a click lands on it. It leaves the menu
// open.
func signOutReachable(t *testing.T, ctx context.Context, base, path string) {
	t.Helper()
	var width int
	var toggle bool
	var b box
	step(t, ctx, "open "+path+" at 390 px",
		chromedp.Navigate(base+path),
		chromedp.WaitReady(`.logout button`, chromedp.ByQuery),
		// The style sheets loaded: a Menu pressed before them focuses its
		// first link wherever the unstyled page has it (5,000 px down the
		// settings page, CI once), and the scroll stays when they apply.
		chromedp.Poll(`document.readyState === "complete"`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
		chromedp.Evaluate(`(() => { const b = document.getElementById("nav-toggle"); if (!b || !b.offsetParent) return false; b.click(); return true; })()`, &toggle),
		boxOf(`.logout button`, &b),
	)
	if width > 390 {
		var wide []string
		step(t, ctx, "what is too wide", chromedp.Evaluate(wideElements, &wide))
		t.Errorf("%s is %d px wide at 390 px: it scrolls sideways; too wide: %q", path, width, wide)
	}
	if b.Left < 0 || b.Top < 0 || b.Right > b.W || b.Bottom > b.H || b.Right-b.Left < 1 {
		t.Fatalf("%s: Sign out at %+v lies outside the %gx%g viewport", path, b, b.W, b.H)
	}
	if !b.Hit {
		t.Errorf("%s: Sign out at %+v is covered: a click there lands elsewhere", path, b)
	}
	if !toggle {
		t.Fatalf("%s: no Menu button at 390 px", path)
	}
}

// wideElements names the elements of <main> that reach past 390 px or
// whose content overflows them.
const wideElements = `[...document.querySelectorAll("main *")]
	.filter(e => e.getBoundingClientRect().right > 390 || e.scrollWidth > e.clientWidth + 1)
	.slice(0, 8).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).replace(/ /g, ".") : ""))`

// TestBrowserHeaderOnPhone opens every page with the header at 390x844 (a
// phone) as an admin who owns the project, whose header is the longest: no
// page scrolls sideways, the Menu button opens the navigation, and Sign out
// lies wholly inside the viewport, clickable. On the board: the menu says
// it is open and takes the focus, passes axe-core in both themes, Escape
// closes it and gives the focus back to its button, which shows a focus
// ring, and a click on Sign out signs out.
func TestBrowserHeaderOnPhone(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Done."}}, envOptions{quiet: true, reach: true})
	admin := e.addUser("bartholomew.featherstonehaugh@example.com", "", true) // the e-mail is the name: long, unbroken
	if err := e.st.SetMember(t.Context(), e.project.ID, admin.ID, roleOwner); err != nil {
		t.Fatal(err)
	}
	s := e.newSession()
	ctx := browser(t)
	e.signInBrowser(t, ctx, admin)
	step(t, ctx, "a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	pp := "/projects/" + strconv.FormatInt(e.project.ID, 10)
	for _, path := range []string{"/sessions/" + s.ID, pp, pp + "/settings", pp + "/history", "/inbox", "/notifications",
		"/account", "/tokens", "/admin/users", "/audit", "/sessions/" + s.ID + "/files", "/projects/999999", "/"} {
		signOutReachable(t, ctx, e.web.URL, path)
	}
	var expanded string
	var focused string
	step(t, ctx, "the menu says it is open",
		chromedp.AttributeValue(`#nav-toggle`, "aria-expanded", &expanded, nil, chromedp.ByID),
		chromedp.Evaluate(`document.activeElement.textContent.trim()`, &focused),
	)
	if expanded != "true" || focused != "Projects" {
		t.Errorf("open menu: aria-expanded %q, focus on %q; want true and the first link", expanded, focused)
	}
	checkAxe(t, ctx, "header menu at 390 px")
	var png []byte
	step(t, ctx, "screenshot the open menu", chromedp.CaptureScreenshot(&png))
	_ = os.WriteFile(filepath.Join(artefactDir(t), "header-menu-390.png"), png, 0o644)
	step(t, ctx, "Escape closes it",
		chromedp.KeyEvent("\x1b"),
		chromedp.AttributeValue(`#nav-toggle`, "aria-expanded", &expanded, nil, chromedp.ByID),
		chromedp.Evaluate(`document.activeElement.id`, &focused),
	)
	if expanded != "false" || focused != "nav-toggle" {
		t.Errorf("after Escape: aria-expanded %q, focus on #%s; want false and #nav-toggle", expanded, focused)
	}
	var ring string
	step(t, ctx, "the focus shows", chromedp.Evaluate(`(() => { const s = getComputedStyle(document.activeElement);
		return document.activeElement.matches(":focus-visible") + " " + s.outlineStyle + " " + s.outlineWidth; })()`, &ring))
	if ring != "true solid 2px" {
		t.Errorf("the Menu button, focused from the keyboard, shows %q; want a visible 2px outline (true solid 2px)", ring)
	}
	var url string
	step(t, ctx, "sign out from the menu",
		chromedp.Click(`#nav-toggle`, chromedp.ByID),
		chromedp.Click(`.logout button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#email`, chromedp.ByID),
		chromedp.Location(&url),
	)
	if !strings.Contains(url, "/login") {
		t.Errorf("after Sign out the browser is at %s", url)
	}
}

// TestBrowserThemeChoice switches the theme from the header: the choice
// holds over a reload and is in place before the body is parsed (no flash
// of the other theme); "System theme" follows the system again.
func TestBrowserThemeChoice(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Done."}}, envOptions{quiet: true})
	ctx := e.browser(t)
	system := func(scheme string) chromedp.Action {
		return emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}})
	}
	bg := func(out *string) chromedp.Action {
		return chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, out)
	}
	const white, dark = "rgb(255, 255, 255)", "rgb(22, 24, 28)"
	var got, early string
	step(t, ctx, "the system is light",
		system("light"),
		chromedp.ActionFunc(func(ctx context.Context) error {
			// Notes <html data-theme> when <body> is first inserted: before
			// anything of the page can paint.
			_, err := page.AddScriptToEvaluateOnNewDocument(`new MutationObserver((_, o) => { if (document.body) {
				window.__themeAtBody = document.documentElement.getAttribute("data-theme") || "none"; o.disconnect(); } })
				.observe(document, {childList: true, subtree: true});`).Do(ctx)
			return err
		}),
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#theme-pick`, chromedp.ByID),
		bg(&got),
	)
	if got != white {
		t.Errorf("light system, no choice: background %s, want %s", got, white)
	}
	step(t, ctx, "pick Dark", chromedp.SetValue(`#theme-pick`, "dark", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("theme-pick").dispatchEvent(new Event("change"))`, nil), bg(&got))
	if got != dark {
		t.Errorf("after picking Dark: background %s, want %s", got, dark)
	}
	var picked string
	step(t, ctx, "reload",
		chromedp.Reload(),
		chromedp.WaitVisible(`#theme-pick`, chromedp.ByID),
		bg(&got),
		chromedp.Evaluate(`window.__themeAtBody`, &early),
		chromedp.Value(`#theme-pick`, &picked, chromedp.ByID),
	)
	if got != dark || early != "dark" || picked != "dark" {
		t.Errorf("after a reload: background %s, data-theme when <body> began %q, picker %q; want %s, dark, dark", got, early, picked, dark)
	}
	step(t, ctx, "the system turns dark, then the person picks Light", system("dark"),
		chromedp.SetValue(`#theme-pick`, "light", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("theme-pick").dispatchEvent(new Event("change"))`, nil), bg(&got))
	if got != white {
		t.Errorf("Light picked on a dark system: background %s, want %s", got, white)
	}
	var stored string
	step(t, ctx, "pick System theme", chromedp.SetValue(`#theme-pick`, "system", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("theme-pick").dispatchEvent(new Event("change"))`, nil), bg(&got),
		chromedp.Evaluate(`String(localStorage.getItem("parley-theme"))`, &stored))
	if got != dark || stored != "null" {
		t.Errorf("System theme on a dark system: background %s, stored %q; want %s and nothing stored", got, stored, dark)
	}
}
