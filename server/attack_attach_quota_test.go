package server

import (
	"bytes"
	"net/http"
	"testing"

	"parley/attach"
	"parley/runner/fakeapi"
)

// TestAttachPendingBytesPerMember: uploads wait in Postgres until sent,
// and the only bound was 20 per member per session (stale ones dropped
// only by the next upload to that same session). The attack: a hostile
// member uploads 10 MB files and never sends them, spread over sessions
// (one more session per file would do), to fill the database. A member's
// pending uploads, across all sessions, are bounded by
// attach.MaxPendingBytes: the upload over it is refused with 429.
func TestAttachPendingBytesPerMember(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{}, envOptions{quiet: true})
	big := bytes.Repeat([]byte("x"), attach.MaxFileBytes)
	sessions := []string{e.newSession().ID, e.newSession().ID}
	n := int(attach.MaxPendingBytes / attach.MaxFileBytes)
	for i := range n {
		e.uploadID(e.user, sessions[i%2], "big.txt", big)
	}
	status, body := e.upload(e.user, sessions[n%2], "big.txt", "text/plain", big)
	if status != http.StatusTooManyRequests {
		t.Fatalf("upload %d of %d MB pending: %d %s; want 429", n+1, attach.MaxFileBytes>>20, status, body)
	}
	// Another member is not held by it.
	other := e.member("other@example.com", "Otto", roleMember)
	if status, body := e.upload(other, sessions[0], "small.txt", "text/plain", []byte("hi")); status != http.StatusOK {
		t.Errorf("another member's upload: %d %s", status, body)
	}
}
