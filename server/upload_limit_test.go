package server

import (
	"net/http"
	"strings"
	"testing"

	"parley/runner/fakeapi"
)

// TestUploadRateLimit: uploads had no rate, so a member could post
// attachments as fast as the server took them (each read, sniffed and
// kept in Postgres). With UploadsPerMinute 3, the 4th upload in a minute
// is refused with 429 and the limit's sentence before its body is read,
// and nothing is kept for it; another member still uploads.
func TestUploadRateLimit(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true, limits: Limits{UploadsPerMinute: 3}})
	s := e.newSession()
	for range 3 {
		e.uploadID(e.user, s.ID, "notes.txt", []byte("hello"))
	}
	status, body := e.upload(e.user, s.ID, "notes.txt", "text/plain", []byte("one too many"))
	if status != http.StatusTooManyRequests || !strings.Contains(body, "You are uploading files too quickly (the limit is 3 a minute): try again in") {
		t.Errorf("4th upload in a minute: %d %.300q; want 429 with the limit", status, body)
	}
	var n int
	e.queryRow(`SELECT count(*) FROM attachments WHERE session_id = $1`, []any{s.ID}, &n)
	if n != 3 {
		t.Errorf("%d attachments kept; want 3 (the 4th refused)", n)
	}
	// The limit is per member: another one still uploads.
	other := e.member("other@example.com", "Otto", roleMember)
	e.uploadID(other, s.ID, "theirs.txt", []byte("hi"))
}
