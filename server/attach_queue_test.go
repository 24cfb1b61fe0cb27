package server

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/attach"
	"parley/runner/fakeapi"
)

// TestQueuedAttachmentsSurviveRestart: a message with an image and a file
// waits in the saved queue for replica A's one claude slot (another
// session's run holds it, waiting on an ask); A is stopped (SIGTERM, no
// other replica) before it is sent. The replica that starts next sends it
// with its image block, the exact bytes read again from the attachments
// table, and the note on the saved file; the queue kept ids, never bytes,
// and the prompt event records the attachments as a direct send does.
func TestQueuedAttachmentsSurviveRestart(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch k"), {Text: "I see the queued image."}}, envOptions{quiet: true})
	a := e.startReplica("A", "PARLEY_DRAIN_TIMEOUT=30", "PARLEY_MAX_RUNS=1")
	s1, s2 := e.newSession(), e.newSession()
	w1 := e.dialReplica(a, e.user, s1.ID)
	w1.prompt("make k")
	e.waitInput(w1, s1.ID)
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s1.ID}, &pid)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })

	img := pngBytes(t, 3, 3)
	status, body := e.upload(e.user, s2.ID, "queued.png", "image/png", img)
	var up attach.Sent
	if status != 200 || json.Unmarshal([]byte(body), &up) != nil {
		t.Fatalf("upload queued.png: %d %s", status, body)
	}
	fileID := e.uploadID(e.user, s2.ID, "notes.txt", []byte("queued notes"))
	w2 := e.dialReplica(a, e.user, s2.ID)
	w2.send(map[string]any{"action": "prompt", "text": "what is in the queued image?", "attach": []string{up.ID, fileID}})
	w2.waitFor(60*time.Second, "Waiting for a free slot")
	if all, _ := e.lineItems(s2.ID); all != 1 {
		t.Fatalf("s2 has %d kept queue items, want its prompt", all)
	}
	var kept string
	e.queryRow(`SELECT coalesce(response::text, '') FROM session_line WHERE session_id = $1`, []any{s2.ID}, &kept)
	if strings.Contains(kept, base64.StdEncoding.EncodeToString(img)) {
		t.Errorf("the saved queue holds the image's bytes: %.200s", kept)
	}

	a.stop(syscall.SIGTERM)
	asked := len(e.fake.Requests())
	a2 := e.startReplica("A2", "PARLEY_MAX_RUNS=1")
	e.dialReplica(a2, e.user, s2.ID).waitFor(90*time.Second, "I see the queued image.")
	reqs := e.fake.Requests()[asked:]
	if len(reqs) != 1 {
		t.Fatalf("after the restart the model got %d requests, want 1", len(reqs))
	}
	want := base64.StdEncoding.EncodeToString(img)
	if got := imageBlockData(t, reqs[0].Raw); len(got) != 1 || got[0] != want {
		t.Errorf("the queued prompt reached the model with image blocks %v long, want one of the %d bytes uploaded", attachLens(got), len(img))
	}
	if text := string(reqs[0].Raw); !strings.Contains(text, "notes.txt") || !strings.Contains(text, "Parley saved them in your working directory") {
		t.Errorf("the queued prompt reached the model without the note on notes.txt: %.2000s", text)
	}
	var rec string
	e.queryRow(`SELECT coalesce((payload->'attachments')::text, '') FROM events WHERE session_id = $1 AND type = 'prompt'`, []any{s2.ID}, &rec)
	if !strings.Contains(rec, up.ID) || !strings.Contains(rec, fileID) || strings.Contains(rec, want) {
		t.Errorf("the prompt event records attachments %s; want both ids and no bytes", rec)
	}
	e.waitLineEmpty(s2.ID, "the delivered prompt")
}

// TestForwardedAttachmentsCarryIdsNotBytes: a message with an image sent
// through replica B to a session whose process runs on replica A is
// forwarded (cluster_requests) with the image's id, not its bytes; A reads
// the bytes from the attachments table and the model gets them exactly.
func TestForwardedAttachmentsCarryIdsNotBytes(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello from A."}, {Text: "I see the forwarded image."}}, envOptions{quiet: true})
	// Every forwarded request's payload, as it was written.
	for _, q := range []string{
		`CREATE TABLE forwarded_payloads (payload text NOT NULL)`,
		`CREATE FUNCTION keep_forwarded() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN INSERT INTO forwarded_payloads VALUES (NEW.payload::text); RETURN NEW; END $$`,
		`CREATE TRIGGER keep_forwarded BEFORE INSERT ON cluster_requests FOR EACH ROW EXECUTE FUNCTION keep_forwarded()`,
	} {
		if err := e.exec(q); err != nil {
			t.Fatal(err)
		}
	}
	a, b := e.startReplica("A"), e.startReplica("B")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("hello")
	wa.waitFor(90*time.Second, "Hello from A.")
	if got := e.owner(s.ID); got != a.id {
		t.Fatalf("owner %q, want A (%s)", got, a.id)
	}
	img := pngBytes(t, 4, 4)
	status, body := e.upload(e.user, s.ID, "fwd.png", "image/png", img)
	var up attach.Sent
	if status != 200 || json.Unmarshal([]byte(body), &up) != nil {
		t.Fatalf("upload fwd.png: %d %s", status, body)
	}
	asked := len(e.fake.Requests())
	wb := e.dialReplica(b, e.user, s.ID)
	wb.send(map[string]any{"action": "prompt", "text": "what is in the forwarded image?", "attach": up.ID})
	wb.waitFor(90*time.Second, "I see the forwarded image.")
	reqs := e.fake.Requests()[asked:]
	want := base64.StdEncoding.EncodeToString(img)
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests for the forwarded message, want 1", len(reqs))
	}
	if got := imageBlockData(t, reqs[0].Raw); len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("the forwarded message reached the model with image blocks %v long, want the %d bytes uploaded last", attachLens(got), len(img))
	}
	var n, withBytes, withID int
	e.queryRow(`SELECT count(*), count(*) FILTER (WHERE strpos(payload, $1) > 0), count(*) FILTER (WHERE strpos(payload, $2) > 0)
		FROM forwarded_payloads`, []any{want, up.ID}, &n, &withBytes, &withID)
	if withID == 0 {
		t.Fatalf("no forwarded request named the image (%d forwarded): the message was not forwarded", n)
	}
	if withBytes != 0 {
		t.Errorf("%d forwarded requests hold the image's bytes, want none", withBytes)
	}
}
