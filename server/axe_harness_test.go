package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// axeTags are the axe-core rules the pages must pass: WCAG 2.0 and 2.1,
// levels A and AA (contrast, names and labels, structure).
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}

// themes are the two themes every page is checked in (static/theme.css).
var themes = []string{"light", "dark"}

var axeSource struct {
	once sync.Once
	text string
	err  error
}

// axeScript returns axe-core's script, $PARLEY_AXE_JS (installed, pinned,
// by scripts/install-test-deps.sh). Without it the test is skipped, or
// fails when PARLEY_REQUIRE_ALL=1.
func axeScript(t testing.TB) string {
	t.Helper()
	path := os.Getenv("PARLEY_AXE_JS")
	if path == "" {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("axe-core not found: set PARLEY_AXE_JS (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("axe-core not found: set PARLEY_AXE_JS")
	}
	axeSource.once.Do(func() {
		b, err := os.ReadFile(path)
		axeSource.text, axeSource.err = string(b), err
	})
	if axeSource.err != nil {
		t.Fatalf("read axe-core: %v", axeSource.err)
	}
	return axeSource.text
}

// axeViolation is one failed rule of an axe-core run, with the elements
// that fail it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// String is the violation as a test failure lists it: the rule, then each
// element (its CSS path) and what is wrong with it.
func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for i, n := range v.Nodes {
		if i == 8 {
			fmt.Fprintf(&b, "\n    … and %d more", len(v.Nodes)-i)
			break
		}
		fmt.Fprintf(&b, "\n    %v: %s", n.Target, strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return b.String()
}

// axeRun is the page-side run: every WCAG 2 A/AA rule over the document.
var axeRun = `axe.run(document, {runOnly: {type: "tag", values: ` + mustJSON(axeTags) + `}, resultTypes: ["violations"]})
	.then(r => JSON.stringify(r.violations))`

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// checkAxe runs axe-core on the page open in ctx, once in each theme, and
// fails t with every violation, naming the page and the theme. With
// PARLEY_ARTEFACTS set it keeps a screenshot of each. The theme is
// pinned as the header's picker pins it (<html data-theme>) and restored
// after.
func checkAxe(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	src := axeScript(t)
	for _, theme := range themes {
		var found []axeViolation
		var png []byte
		var shot *[]byte
		if os.Getenv("PARLEY_ARTEFACTS") != "" {
			shot = &png // a picture of each page in each theme, for people to look at
		}
		step(t, ctx, "axe-core on "+what+" ("+theme+")", chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			found, err = axeOnce(ctx, src, theme, shot)
			return err
		}))
		if len(png) > 0 {
			name := strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(what) + "-" + theme + ".png"
			_ = os.WriteFile(filepath.Join(artefactDir(t), name), png, 0o644)
		}
		for _, v := range found {
			t.Errorf("axe: %s (%s theme): %s", what, theme, v)
		}
	}
}

// axeOnce injects axe-core if the page lacks it (the DevTools protocol's
// Runtime.evaluate is not bound by the page's Content-Security-Policy),
// pins theme, runs the rules, takes a screenshot into shot (when not nil)
// and restores the page's own theme.
func axeOnce(ctx context.Context, src, theme string, shot *[]byte) ([]axeViolation, error) {
	var have bool
	if err := evalJS(ctx, `typeof axe === "object"`, &have); err != nil {
		return nil, fmt.Errorf("look for axe-core: %w", err)
	}
	if !have {
		if err := evalJS(ctx, src+"\n;true", nil); err != nil {
			return nil, fmt.Errorf("inject axe-core: %w", err)
		}
	}
	pin := `(() => { const r = document.documentElement; window.__themeWas = r.getAttribute("data-theme");
		r.setAttribute("data-theme", ` + mustJSON(theme) + `); return new Promise(ok => requestAnimationFrame(() => ok(true))); })()`
	if err := evalJS(ctx, pin, nil); err != nil {
		return nil, fmt.Errorf("pin the theme: %w", err)
	}
	// A check that ran in the other theme would prove nothing.
	var scheme string
	if err := evalJS(ctx, `getComputedStyle(document.body).colorScheme`, &scheme); err != nil || scheme != theme {
		return nil, fmt.Errorf("the page's color-scheme is %q (%v), not %s: is static/theme.css linked?", scheme, err, theme)
	}
	var out string
	err := evalJS(ctx, axeRun, &out)
	if err == nil && shot != nil {
		*shot, err = page.CaptureScreenshot().Do(ctx)
	}
	restore := `(() => { const r = document.documentElement, was = window.__themeWas;
		if (was === null) r.removeAttribute("data-theme"); else r.setAttribute("data-theme", was); return true; })()`
	if rerr := evalJS(ctx, restore, nil); err == nil && rerr != nil {
		err = fmt.Errorf("restore the theme: %w", rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("run axe-core: %w", err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		return nil, fmt.Errorf("read axe-core's result: %w", err)
	}
	return vs, nil
}

// evalJS evaluates expr in the page, awaiting a promise, and decodes its
// value into out (when not nil).
func evalJS(ctx context.Context, expr string, out any) error {
	res, exc, err := runtime.Evaluate(expr).WithAwaitPromise(true).WithReturnByValue(true).Do(ctx)
	if err != nil {
		return err
	}
	if exc != nil {
		msg := exc.Text
		if exc.Exception != nil {
			msg += " " + exc.Exception.Description
		}
		return fmt.Errorf("%s", msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.Value, out)
}

// focusRing describes the focused element and whether it shows the focus:
// an outline of at least 2 px, or (a visually hidden input) a ringed label.
const focusRing = `(() => { const e = document.activeElement; if (!e || e === document.body) return "";
	const ring = el => { const s = getComputedStyle(el); return s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2; };
	const lab = e.id && document.querySelector('label[for="' + e.id + '"]');
	const shown = ring(e) || (e.classList.contains("sr-only") && lab && ring(lab));
	return (shown ? "ok " : "none ") + e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + (e.getAttribute("aria-label") || e.textContent || e.name || "").trim().slice(0, 30); })()`

// checkFocusRings presses Tab up to n times on the page open in ctx and
// fails t for each control the keyboard reaches that shows no focus ring.
func checkFocusRings(t testing.TB, ctx context.Context, what string, n int) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		var got string
		step(t, ctx, "Tab on "+what, chromedp.KeyEvent("\t"), chromedp.Evaluate(focusRing, &got))
		if got == "" || seen[got] {
			continue
		}
		seen[got] = true
		if strings.HasPrefix(got, "none ") {
			t.Errorf("%s: %s shows no focus ring when reached by Tab", what, strings.TrimPrefix(got, "none "))
		}
	}
	if len(seen) < 2 {
		t.Errorf("%s: Tab reached only %d controls: %v", what, len(seen), seen)
	}
}
