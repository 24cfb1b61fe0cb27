package server

import (
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestBrowserAppIsInstallable: Chromium finds Parley installable as a
// home-screen app (no installability errors, the manifest parses without
// errors, standalone), and every icon the manifest and the page name is a
// PNG of the size it claims.
func TestBrowserAppIsInstallable(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{reach: true, quiet: true})
	ctx := e.browser(t)
	var errs []*page.InstallabilityError
	var manifestURL, data string
	var parseErrs []*page.AppManifestError
	step(t, ctx, "open Parley and ask Chromium about installing it",
		chromedp.Navigate(e.web.URL+"/"),
		chromedp.WaitVisible(`#new-prompt`, chromedp.ByID),
		chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			if errs, err = page.GetInstallabilityErrors().Do(ctx); err != nil {
				return err
			}
			manifestURL, parseErrs, data, _, err = page.GetAppManifest().Do(ctx)
			return err
		}),
	)
	for _, ie := range errs {
		t.Errorf("installability error %s %+v", ie.ErrorID, ie.ErrorArguments)
	}
	for _, pe := range parseErrs {
		t.Errorf("manifest error: %s (line %d)", pe.Message, pe.Line)
	}
	if manifestURL != e.web.URL+"/manifest.webmanifest" {
		t.Fatalf("manifest URL = %q", manifestURL)
	}
	var m struct {
		Display string `json:"display"`
		Icons   []struct{ Src, Sizes, Purpose string }
	}
	if err := json.Unmarshal([]byte(data), &m); err != nil || m.Display != "standalone" || len(m.Icons) < 3 {
		t.Fatalf("manifest %s (%v): want standalone with icons", data, err)
	}
	icons := map[string]string{"/static/icons/apple-touch-icon.png": "180x180"} // the page's apple-touch-icon
	for _, i := range m.Icons {
		icons[i.Src] = i.Sizes
	}
	for src, sizes := range icons {
		res, err := http.Get(e.web.URL + src)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s, %v", src, res.Status, err)
			continue
		}
		if b := img.Bounds(); fmt.Sprintf("%dx%d", b.Dx(), b.Dy()) != sizes {
			t.Errorf("%s is %dx%d, the manifest says %s", src, b.Dx(), b.Dy(), sizes)
		}
	}
}
