package server

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/attach"
	"parley/runner/fakeapi"
)

// TestExportListsAttachments: a message sent with an image and a file
// (real CLI, fake model) is exported with its attachments listed: in the
// .md the image as a link to its authorized route and the file by where
// it was saved, each with its type and size; in the .json their ids and
// metadata. Neither holds the image's bytes.
func TestExportListsAttachments(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "I see them."}}, envOptions{quiet: true})
	s := e.newSession()
	img := pngBytes(t, 2, 2)
	status, body := e.upload(e.user, s.ID, "shot [1].png", "image/png", img)
	var im attach.Sent
	if status != 200 || json.Unmarshal([]byte(body), &im) != nil {
		t.Fatalf("upload the image: %d %s", status, body)
	}
	fileID := e.uploadID(e.user, s.ID, "notes.txt", []byte("export notes"))
	w := e.dial(s.ID, 0)
	w.send(map[string]any{"action": "prompt", "text": "look at these", "attach": []string{im.ID, fileID}})
	w.waitFor(60*time.Second, "I see them.")
	b64 := base64.StdEncoding.EncodeToString(img)

	md := e.getAs(e.user, "/sessions/"+s.ID+"/export.md")
	for _, want := range []string{
		"> look at these\n\nAttached:\n\n",
		"- Image [shot \\[1\\].png](" + e.web.URL + "/attachments/" + im.ID + ") (image/png, 1 KiB)\n",
		"- File notes.txt (1 KiB), saved at `" + attach.UploadsDir + "/",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the .md export lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, b64) {
		t.Error("the .md export holds the image's bytes")
	}

	raw := e.getAs(e.user, "/sessions/"+s.ID+"/export.json")
	var x struct {
		Attachments []exportedAttachment `json:"attachments"`
	}
	if err := json.Unmarshal([]byte(raw), &x); err != nil {
		t.Fatalf("the .json export: %v\n%.500s", err, raw)
	}
	if len(x.Attachments) != 2 {
		t.Fatalf("the .json export lists %d attachments, want 2: %+v", len(x.Attachments), x.Attachments)
	}
	gi, gf := x.Attachments[0], x.Attachments[1]
	if gi.ID != im.ID || gi.Kind != attach.KindImage || gi.Name != "shot [1].png" || gi.MediaType != "image/png" ||
		gi.Size != int64(len(img)) || gi.URL != "/attachments/"+im.ID || gi.Seq == 0 {
		t.Errorf("the image in the .json export: %+v", gi)
	}
	if gf.ID != fileID || gf.Kind != attach.KindFile || gf.Name != "notes.txt" || gf.Size != 12 ||
		!strings.HasPrefix(gf.Path, attach.UploadsDir+"/") || gf.URL != "" || gf.Seq != gi.Seq {
		t.Errorf("the file in the .json export: %+v", gf)
	}
	if strings.Contains(raw, b64) {
		t.Error("the .json export holds the image's bytes")
	}
}

// TestSessionDeleteRemovesAttachments: an owner's delete and the
// retention sweep remove a session's attachments rows (sent and pending,
// image bytes with them), and leave another session's alone.
func TestSessionDeleteRemovesAttachments(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	owner := e.member("owner@example.com", "Olga Owner", roleOwner)
	byOwner, byRetention, kept := e.newSession(), e.newSession(), e.newSession()
	for _, s := range []string{byOwner.ID, byRetention.ID, kept.ID} {
		e.sentImage(s)
		e.uploadID(e.user, s, "pending.txt", []byte("not sent yet"))
		if n := e.sessionRows(s)["attachments"]; n != 2 {
			t.Fatalf("session %s has %d attachments rows before the delete, want 2", s, n)
		}
	}
	if resp := e.postAs(owner, "/sessions/"+byOwner.ID+"/delete", nil); resp.StatusCode != 200 {
		t.Fatalf("owner's delete: %d", resp.StatusCode)
	}
	e.wantSessionGone(byOwner, "")

	e.backdate(2, byRetention.ID)
	if resp := e.postAs(owner, "/projects/"+pid(e)+"/settings/retention", url.Values{"retention_days": {"1"}}); resp.StatusCode != 303 {
		t.Fatalf("set retention: %d", resp.StatusCode)
	}
	if n, err := e.srv.SessionDeleter().Sweep(t.Context()); n != 1 || err != nil {
		t.Fatalf("retention swept %d, %v; want 1", n, err)
	}
	e.wantSessionGone(byRetention, "")
	if n := e.sessionRows(kept.ID)["attachments"]; n != 2 {
		t.Errorf("the other session has %d attachments rows left, want 2", n)
	}
}
