package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley/attach"
	"parley/launch"
	"parley/runner/fakeapi"
)

// upload posts one file as u to the session's upload route, with the file
// name exactly as given (a browser's or an attacker's), and returns the
// status and the body.
func (e *env) upload(u *testUser, sessionID, name, typ string, data []byte) (int, string) {
	e.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", typ)
	part, err := mw.CreatePart(h)
	if err != nil {
		e.t.Fatal(err)
	}
	part.Write(data)
	mw.Close()
	req, err := http.NewRequestWithContext(e.t.Context(), "POST", e.web.URL+"/sessions/"+sessionID+"/attachments", &body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = e.header(u)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	if u != nil {
		req.Header.Set(csrfHeader, u.CSRF)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// uploadID uploads a file that must be accepted and returns its id.
func (e *env) uploadID(u *testUser, sessionID, name string, data []byte) string {
	e.t.Helper()
	status, body := e.upload(u, sessionID, name, "text/plain", data)
	var a attach.Sent
	if status != 200 || json.Unmarshal([]byte(body), &a) != nil || a.ID == "" {
		e.t.Fatalf("upload %s: %d %s", name, status, body)
	}
	return a.ID
}

// TestAttachNameIsNeverAPath: names that are paths are refused with a
// sentence, as the page refuses them; nothing is kept.
func TestAttachNameIsNeverAPath(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	s := e.newSession()
	for _, name := range []string{"../../etc/x", "a/b", `..\..\x`, "..", "/etc/passwd", "tab\there"} {
		status, body := e.upload(e.user, s.ID, name, "text/plain", []byte("x"))
		if status != http.StatusBadRequest || !strings.Contains(body, "Rename the file") && !strings.Contains(body, "rename the file") {
			t.Errorf("upload named %q: %d %q, want 400 and a sentence", name, status, body)
		}
	}
	status, body := e.upload(e.user, s.ID, "fake.png", "image/png", []byte("not an image"))
	if status != http.StatusBadRequest || !strings.Contains(body, "is not a PNG, JPEG, GIF or WebP image") {
		t.Errorf("fake.png: %d %q", status, body)
	}
	big := make([]byte, attach.MaxImageBytes+1)
	copy(big, "\x89PNG\r\n\x1a\n")
	if status, body := e.upload(e.user, s.ID, "big.png", "image/png", big); status != http.StatusBadRequest || !strings.Contains(body, "an image may be at most") {
		t.Errorf("big.png: %d %q", status, body)
	}
	if status, _ := e.upload(e.user, s.ID, "huge.txt", "text/plain", make([]byte, attach.UploadBodyBytes)); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the upload limit: %d, want 413", status)
	}
}

// TestAttachPlantedLinkWritesNothingOutside: a run that made the upload
// folder a link to a directory outside the project gets nothing written
// there; the member is told why and the message is not sent.
func TestAttachPlantedLinkWritesNothingOutside(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	s := e.newSession()
	ws, err := launch.SyncWorkspace(e.dataDir, e.project)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, ".parley")); err != nil {
		t.Fatal(err)
	}
	id := e.uploadID(e.user, s.ID, "notes.txt", []byte("secret plan"))
	w := e.dial(s.ID, 0)
	w.send(map[string]any{"action": "prompt", "text": "read it", "attach": id})
	w.waitFor(10*time.Second, html.EscapeString("Parley did not save the attached files: .parley/uploads in the project is a link or not a folder"))
	var found []string
	filepath.WalkDir(outside, func(p string, d os.DirEntry, err error) error {
		if p != outside {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 0 {
		t.Errorf("written outside the project: %v", found)
	}
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the message was sent anyway (%d model requests)", n)
	}
}

// TestAttachOnlyTheUploaderSendsIt: another member cannot send someone's
// upload by its id, and a viewer can neither upload nor send one.
func TestAttachOnlyTheUploaderSendsIt(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello."}}, envOptions{quiet: true})
	s := e.newSession()
	id := e.uploadID(e.user, s.ID, "notes.txt", []byte("mine"))
	other := e.member("other@example.com", "Otto", roleMember)
	w := e.dialAs(other, s.ID, 0)
	w.send(map[string]any{"action": "prompt", "text": "read it", "attach": id})
	w.waitFor(10*time.Second, "no longer waiting to be sent")
	viewer := e.member("viewer@example.com", "Vi", roleViewer)
	if status, _ := e.upload(viewer, s.ID, "notes.txt", "text/plain", []byte("x")); status != http.StatusForbidden {
		t.Errorf("a viewer's upload: %d, want 403", status)
	}
	vw := e.dialAs(viewer, s.ID, 0)
	vw.send(map[string]any{"action": "prompt", "text": "read it", "attach": id})
	vw.waitFor(10*time.Second, "Viewers can watch this project but not prompt")
	if n := len(e.fake.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
}

// sentImage uploads a PNG as the env's member and marks it sent: anyone
// who may read the session may fetch it, and removing it changes nothing.
func (e *env) sentImage(sessionID string) string {
	e.t.Helper()
	status, body := e.upload(e.user, sessionID, "shot.png", "image/png", pngBytes(e.t, 2, 2))
	var a attach.Sent
	if status != 200 || json.Unmarshal([]byte(body), &a) != nil {
		e.t.Fatalf("upload shot.png: %d %s", status, body)
	}
	if err := e.st.AttachmentsSent(e.t.Context(), []string{a.ID}, nil); err != nil {
		e.t.Fatal(err)
	}
	return a.ID
}
