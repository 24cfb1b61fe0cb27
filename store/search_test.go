package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/store"
)

// seed creates sessions with transcripts to search.
func seed(t *testing.T, s *store.Store) (projectID int64, ids map[string]string) {
	t.Helper()
	ctx := t.Context()
	p, err := s.EnsureDefaultProject(ctx, "default", "/tmp/ws")
	if err != nil {
		t.Fatal(err)
	}
	ids = map[string]string{}
	for _, x := range []struct {
		title  string
		events []store.Event
	}{
		{"Fix the login page", []store.Event{
			{Type: "prompt", Payload: json.RawMessage(`{"text":"The login form rejects valid passwords","by":"alice"}`)},
			{Type: "assistant", Payload: json.RawMessage(`{"message":{"id":"m1","content":[{"type":"text","text":"The migrations table is missing an index."}]}}`)},
		}},
		{"Write release notes", []store.Event{
			{Type: "prompt", Payload: json.RawMessage(`{"text":"Summarise the changes since v1.2","by":"bob"}`)},
			{Type: "stream_event", Payload: json.RawMessage(`{"event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"index"}}}`)},
			// Odd payloads must neither fail the insert nor match.
			{Type: "assistant", Payload: json.RawMessage(`{"message":{"content":"not an array"}}`)},
			{Type: "prompt", Payload: json.RawMessage(`{"text":42}`)},
		}},
		{"Database tuning", nil},
	} {
		sess, err := s.CreateSession(ctx, p.ID, x.title, "alice")
		if err != nil {
			t.Fatal(err)
		}
		ids[x.title] = sess.ID
		for i, e := range x.events {
			e.SessionID, e.Seq = sess.ID, int64(i+1)
			if err := s.AppendEvent(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p.ID, ids
}

func titles(hits []store.SessionHit) []string {
	out := []string{}
	for _, h := range hits {
		out = append(out, h.Title)
	}
	return out
}

func TestSearchSessions(t *testing.T) {
	s := open(t)
	pid, _ := seed(t, s)
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"Database tuning", "Write release notes", "Fix the login page"}},
		{"indexes", []string{"Fix the login page"}},           // stemmed, from Claude's text only (not the stream)
		{"password", []string{"Fix the login page"}},          // from a prompt
		{"release", []string{"Write release notes"}},          // from the title
		{"datab", []string{"Database tuning"}},                // title substring
		{`"valid passwords"`, []string{"Fix the login page"}}, // phrase
		{"nothing-matches-this", []string{}},
	}
	for _, tt := range tests {
		hits, err := s.SearchSessions(t.Context(), pid, tt.query, false, 100)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, titles(hits)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", tt.query, diff)
		}
	}
	hits, err := s.SearchSessions(t.Context(), pid, "index", false, 100)
	if err != nil || len(hits) != 1 {
		t.Fatalf("search index = %v, %v", hits, err)
	}
	if want := store.SnippetStart + "index" + store.SnippetStop; !strings.Contains(hits[0].Snippet, want) {
		t.Errorf("snippet %q lacks %q", hits[0].Snippet, want)
	}
}

func TestRenameArchiveAndLastPrompt(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	pid, ids := seed(t, s)
	if err := s.RenameSession(ctx, ids["Database tuning"], "Postgres tuning"); err != nil {
		t.Fatal(err)
	}
	if err := s.ArchiveSession(ctx, ids["Write release notes"], true); err != nil {
		t.Fatal(err)
	}
	hits, err := s.SearchSessions(ctx, pid, "", false, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Postgres tuning", "Fix the login page"}, titles(hits)); diff != "" {
		t.Errorf("unarchived list (-want +got):\n%s", diff)
	}
	hits, err = s.SearchSessions(ctx, pid, "", true, 100)
	if err != nil || len(hits) != 3 {
		t.Fatalf("with archived = %v, %v", titles(hits), err)
	}
	if archived, _ := s.SessionArchived(ctx, ids["Write release notes"]); !archived {
		t.Error("archived session not reported archived")
	}
	if err := s.ArchiveSession(ctx, ids["Write release notes"], false); err != nil {
		t.Fatal(err)
	}
	if archived, _ := s.SessionArchived(ctx, ids["Write release notes"]); archived {
		t.Error("restored session still archived")
	}
	if got, err := s.LastPrompt(ctx, ids["Fix the login page"]); err != nil || got != "The login form rejects valid passwords" {
		t.Errorf("LastPrompt = %q, %v", got, err)
	}
	if _, err := s.LastPrompt(ctx, ids["Database tuning"]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastPrompt of an empty session: %v, want ErrNotFound", err)
	}
	if err := s.RenameSession(ctx, "00000000-0000-0000-0000-000000000000", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rename a missing session: %v", err)
	}
}
