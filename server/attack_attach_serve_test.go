package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"parley/attach"
	"parley/runner/fakeapi"
)

// TestAttachmentNeverServedAsAPage: the attack is an upload that a
// browser would run as a page on Parley's origin when a teammate opens
// it: an SVG with a script, an HTML file named .png, and a polyglot (a
// real PNG header followed by HTML). Only a real PNG, JPEG, GIF or WebP
// is served as itself (under nosniff and a sandbox CSP); everything else
// is an octet-stream download, sandboxed. And an outsider gets a 404.
func TestAttachmentNeverServedAsAPage(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	s := e.newSession()
	html := []byte(`<html><script>fetch("/")</script></html>`)
	cases := []struct {
		name, typ string
		data      []byte
		image     bool
	}{
		{"x.svg", "image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="fetch('/')"/>`), false},
		{"page.html", "text/html", html, false},
		{"poly.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), html...), true},
	}
	outsider := e.addUser("out@example.com", "Olga Outsider", false)
	for _, c := range cases {
		status, body := e.upload(e.user, s.ID, c.name, c.typ, c.data)
		var a attach.Sent
		if status != http.StatusOK || json.Unmarshal([]byte(body), &a) != nil {
			t.Errorf("upload %s: %d %s", c.name, status, body)
			continue
		}
		res := e.do(e.user, http.MethodGet, "/attachments/"+a.ID, nil)
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		h := res.Header
		ct, csp, disp := h.Get("Content-Type"), h.Get("Content-Security-Policy"), h.Get("Content-Disposition")
		switch {
		case res.StatusCode != http.StatusOK || string(got) != string(c.data):
			t.Errorf("%s: %d, %d bytes", c.name, res.StatusCode, len(got))
		case h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(csp, "sandbox"):
			t.Errorf("%s: nosniff %q, CSP %q", c.name, h.Get("X-Content-Type-Options"), csp)
		case c.image && ct != "image/png":
			t.Errorf("%s: served as %q", c.name, ct)
		case !c.image && (ct != "application/octet-stream" || !strings.HasPrefix(disp, "attachment")):
			t.Errorf("%s: served as %q, %q; want an octet-stream download", c.name, ct, disp)
		}
		if res := e.do(outsider, http.MethodGet, "/attachments/"+a.ID, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: an outsider got %d, want 404", c.name, res.StatusCode)
		}
	}
}
