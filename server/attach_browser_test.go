package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"parley/attach"
	"parley/runner/fakeapi"
	"parley/sandbox"
	"parley/store"
)

// TestBrowserPastedImageReachesModel: an image pasted into the composer
// reaches the fake model as an image block with exactly its bytes; the
// event log holds no image bytes; after a reload the transcript shows the
// image, served from its authorized route.
func TestBrowserPastedImageReachesModel(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "I see the image."}}, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	img := pngBytes(t, 8, 6)
	b64 := base64.StdEncoding.EncodeToString(img)
	extra := base64.StdEncoding.EncodeToString(pngBytes(t, 3, 3))
	var extraID string
	step(t, ctx, "paste two images, remove the second",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.Evaluate(pasteJS("shot.png", "image/png", b64), nil),
		pollJS(`document.querySelector('#attach-chips li[data-id]') !== null`),
		chromedp.Evaluate(pasteJS("extra.png", "image/png", extra), nil),
		pollJS(`document.querySelectorAll('#attach-chips li[data-id]').length === 2`),
		pollJS(`[...document.querySelectorAll('#attach-chips li img')].every(i => i.complete && i.naturalWidth > 0)`),
		chromedp.Evaluate(`document.querySelectorAll('#attach-chips li')[1].dataset.id`, &extraID),
		jsClick(`#attach-chips li:nth-child(2) .attach-remove`),
		pollJS(`document.querySelectorAll('#attach-chips li').length === 1`))
	for i := 0; ; i++ {
		if _, err := e.st.GetAttachment(t.Context(), extraID); errors.Is(err, store.ErrNotFound) {
			break
		}
		if i == 50 {
			t.Fatal("the removed upload is still kept")
		}
		time.Sleep(100 * time.Millisecond)
	}
	step(t, ctx, "send the remaining image with a question",
		chromedp.SendKeys(`#prompt`, "What is in this picture?", chromedp.ByID),
		pressEnter(0),
		pollJS(`document.getElementById('events').innerText.includes('I see the image.')`),
		pollJS(`document.querySelectorAll('#attach-chips li').length === 0`))
	reqs := e.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	if got := imageBlockData(t, reqs[0].Raw); len(got) != 1 || got[0] != b64 {
		t.Errorf("the model's request has image blocks %d long, want one: the %d bytes pasted and kept", attachLens(got), len(img))
	}
	evs, err := e.st.EventsAfter(t.Context(), s.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var attached bool
	for _, ev := range evs {
		if bytes.Contains(ev.Payload, []byte(b64)) {
			t.Errorf("event %d (%s) holds the image's bytes", ev.Seq, ev.Type)
		}
		attached = attached || ev.Type == "prompt" && bytes.Contains(ev.Payload, []byte(`"attachments"`))
	}
	if !attached {
		t.Error("no prompt event records the attachment")
	}
	var width int
	step(t, ctx, "reload: the transcript shows the image",
		chromedp.Reload(),
		pollJS(`(() => { const i = document.querySelector('.prompt-attachments img'); return !!i && i.complete && i.naturalWidth > 0; })()`),
		chromedp.Evaluate(`document.querySelector('.prompt-attachments img').naturalWidth`, &width))
	if width != 8 {
		t.Errorf("the thumbnail is %d px wide, want 8", width)
	}
	var href string
	step(t, ctx, "the thumbnail opens the full image",
		chromedp.Evaluate(`document.querySelector('.prompt-attachments a').getAttribute('href')`, &href))
	resp := e.do(e.user, "GET", href, nil)
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != 200 || !bytes.Equal(body.Bytes(), img) || resp.Header.Get("Content-Type") != "image/png" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s: %d %s nosniff=%q, %d bytes", href, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"), body.Len())
	}
	viewer := e.member("viewer@example.com", "Vi", roleViewer)
	if resp := e.do(viewer, "GET", href, nil); resp.StatusCode != 200 {
		t.Errorf("a viewer of the session gets %d for the image", resp.StatusCode)
	}
	if page := e.getAs(viewer, "/sessions/"+s.ID); strings.Contains(page, `id="attach"`) {
		t.Error("a viewer's page has the attach control")
	}
}

// TestBrowserFileSavedWhereClaudeIsTold: a text file picked with the
// Attach button is saved where the message tells Claude, with the same
// content, owned by the owner of the directory Claude works in (the
// project's uid, when the test runs with per-project uids).
func TestBrowserFileSavedWhereClaudeIsTold(t *testing.T) {
	o := envOptions{quiet: true}
	if sandbox.Available() {
		o.isolation, o.guard = "uid", true
	}
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}, {Text: "Got the file."}}, o)
	s := e.newSession()
	ctx := e.browser(t)
	content := []byte("line one\nline two: ünïcode\n")
	local := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(local, content, 0o644); err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "a first message starts Claude",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.SendKeys(`#prompt`, "hello", chromedp.ByID),
		pressEnter(0),
		pollJS(`document.getElementById('events').innerText.includes('Hello.')`))
	step(t, ctx, "pick a file and send it",
		chromedp.SetUploadFiles(`#attach-input`, []string{local}, chromedp.ByID),
		pollJS(`document.querySelector('#attach-chips li[data-id]') !== null`),
		chromedp.SendKeys(`#prompt`, "Read the notes.", chromedp.ByID),
		pressEnter(0),
		pollJS(`document.getElementById('events').innerText.includes('Got the file.')`))
	reqs := e.fake.Requests()
	told := reqs[len(reqs)-1].LastUserText()
	m := regexp.MustCompile(`- (\.parley/uploads/[^ ]+/notes\.txt) \(1 KiB\)[\s\S]*\(Paths are relative to (/[^)]+)\.\)`).FindStringSubmatch(told)
	if m == nil {
		t.Fatalf("the model was not told where the file is:\n%s", told)
	}
	saved := filepath.Join(m[2], m[1])
	got, err := os.ReadFile(saved)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("%s holds %q (%v), want %q", saved, got, err, content)
	}
	fi, _ := os.Stat(saved)
	top, _ := os.Stat(m[2])
	uid, topUID := fi.Sys().(*syscall.Stat_t).Uid, top.Sys().(*syscall.Stat_t).Uid
	if uid != topUID {
		t.Errorf("%s is owned by uid %d, the directory Claude works in by %d", saved, uid, topUID)
	}
	if o.isolation == "uid" && uid == 0 {
		t.Errorf("%s is owned by root, not the project's uid", saved)
	}
	t.Logf("saved %s, uid %d", saved, uid)
	var shown string
	step(t, ctx, "the transcript says where the file went",
		chromedp.Text(`.prompt-attachments`, &shown, chromedp.ByQuery))
	if !strings.Contains(shown, m[1]) {
		t.Errorf("the transcript shows %q, want the path %s", shown, m[1])
	}
}

// TestBrowserRefusesBadAttachments: a file that says it is a PNG but is
// not, and one over the size limit, are refused in the page with the
// server's sentence before anything is uploaded or sent.
func TestBrowserRefusesBadAttachments(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	s := e.newSession()
	ctx := e.browser(t)
	fake := "fake.png is not a PNG, JPEG, GIF or WebP image (its content is something else): attach a real image, or rename the file to attach it as a file."
	var note string
	var chips, uploads int
	step(t, ctx, "a text file named .png, dropped on the composer, is refused in the page",
		chromedp.Navigate(e.web.URL+"/sessions/"+s.ID),
		pollJS(`document.getElementById('conn').dataset.state === 'live'`),
		chromedp.Evaluate(`window.uploads = 0; const f0 = window.fetch; window.fetch = (...a) => { window.uploads++; return f0(...a); }; true`, nil),
		chromedp.Evaluate(dropJS("fake.png", "image/png", base64.StdEncoding.EncodeToString([]byte("hello, not an image"))), nil),
		chromedp.WaitVisible(`#attach-note`, chromedp.ByID),
		chromedp.Text(`#attach-note`, &note, chromedp.ByID))
	if note != fake {
		t.Errorf("the page says %q, want %q", note, fake)
	}
	big := fmt.Sprintf("big.txt is %s; a file may be at most %s.", sizeText(attach.MaxFileBytes+1), sizeText(attach.MaxFileBytes))
	step(t, ctx, "a file over the limit is refused in the page",
		chromedp.Evaluate(fmt.Sprintf(`(() => { const f = new File([new Uint8Array(%d)], 'big.txt', {type: 'text/plain'}); const dt = new DataTransfer(); dt.items.add(f);
			document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true})); return true; })()`, attach.MaxFileBytes+1), nil),
		pollJS(`document.getElementById('attach-note').textContent.startsWith('big.txt')`),
		chromedp.Text(`#attach-note`, &note, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll('#attach-chips li').length`, &chips),
		chromedp.Evaluate(`window.uploads`, &uploads))
	if note != big {
		t.Errorf("the page says %q, want %q", note, big)
	}
	if chips != 0 || uploads != 0 {
		t.Errorf("%d chips, %d uploads after two refusals", chips, uploads)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
}

// pasteJS pastes a file of the base64 content b64 into the prompt box.
func pasteJS(name, typ, b64 string) string {
	return fmt.Sprintf(`(() => { const s = atob(%q); const u = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
		const dt = new DataTransfer(); dt.items.add(new File([u], %q, {type: %q}));
		document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true})); return true; })()`, b64, name, typ)
}

// dropJS drops a file of the base64 content b64 on the composer.
func dropJS(name, typ, b64 string) string {
	return strings.Replace(pasteJS(name, typ, b64), `document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt,`,
		`document.querySelector('.composer').dispatchEvent(new DragEvent('drop', {dataTransfer: dt,`, 1)
}

// pngBytes is a real w×h PNG (the CLI decodes images it forwards).
func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			m.Set(x, y, color.RGBA{uint8(x * 30), uint8(y * 40), 120, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imageBlockData is the base64 data of every image block of a model request.
func imageBlockData(t *testing.T, raw []byte) []string {
	t.Helper()
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages {
		var blocks []struct {
			Type   string `json:"type"`
			Source struct {
				Type string `json:"type"`
				Data string `json:"data"`
			} `json:"source"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "image" && b.Source.Type == "base64" {
				out = append(out, b.Source.Data)
			}
		}
	}
	return out
}

func attachLens(list []string) []int {
	var n []int
	for _, x := range list {
		n = append(n, len(x))
	}
	return n
}
