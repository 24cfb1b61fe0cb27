package askuser

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeAsker answers every question with answer, recording what it was asked.
type fakeAsker struct {
	answer Answer
	err    error

	mu    sync.Mutex
	asked []Form
}

func (f *fakeAsker) Ask(_ context.Context, q Form) (Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	return f.answer, f.err
}

func (f *fakeAsker) questions() []Form {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

func TestRelayHandlerRejects(t *testing.T) {
	b := NewBroker()
	asker := &fakeAsker{answer: Answer{Status: StatusAnswered, Replies: []Reply{{Text: "hi"}}}}
	b.Register("live", asker)
	unregister := b.Register("ended", asker)
	unregister()

	valid := `{"question":"Colour?","options":[{"label":"Red"}]}`
	tests := []struct {
		name       string
		method     string
		auth       string
		body       string
		wantStatus int
		wantBody   string // substring
	}{
		{"GET", http.MethodGet, "Bearer live", "", http.StatusMethodNotAllowed, "use POST"},
		{"PUT", http.MethodPut, "Bearer live", valid, http.StatusMethodNotAllowed, "use POST"},
		{"no token", http.MethodPost, "", valid, http.StatusForbidden, "unknown or ended run token"},
		{"forged token", http.MethodPost, "Bearer forged", valid, http.StatusForbidden, "unknown or ended run token"},
		{"ended token", http.MethodPost, "Bearer ended", valid, http.StatusForbidden, "unknown or ended run token"},
		{"basic auth", http.MethodPost, "Basic live", valid, http.StatusForbidden, "unknown or ended run token"},
		{"not JSON", http.MethodPost, "Bearer live", "question?", http.StatusBadRequest, "invalid question JSON"},
		{"trailing junk", http.MethodPost, "Bearer live", valid + "}", http.StatusBadRequest, "invalid question JSON"},
		{"missing question", http.MethodPost, "Bearer live", `{"options":[{"label":"A"}]}`, http.StatusBadRequest, "question: must not be empty"},
		{"option without label", http.MethodPost, "Bearer live", `{"question":"Q?","options":[{"label":"A"},{"description":"d"}]}`, http.StatusBadRequest, "options[1].label: must not be empty"},
		{"oversized body", http.MethodPost, "Bearer live", `{"question":"` + strings.Repeat("x", maxQuestionBytes) + `"}`, http.StatusRequestEntityTooLarge, "question too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "/internal/ask", strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			RelayHandler(b).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tt.wantStatus, tt.wantBody)
			}
		})
	}
	if len(asker.questions()) != 0 {
		t.Errorf("asker was asked %d questions, want none", len(asker.questions()))
	}
}

func TestRelayHandlerAnswers(t *testing.T) {
	b := NewBroker()
	want := Answer{Status: StatusAnswered, AnsweredBy: "ann", Replies: []Reply{{Selected: []string{"Red", "Blue"}, Text: "both"}}}
	asker := &fakeAsker{answer: want}
	b.Register("live", asker)

	body := `{"question":"Colours?","options":[{"label":"Red"},{"label":"Blue","description":"calm"}],"multiSelect":true}`
	req := httptest.NewRequest(http.MethodPost, "/internal/ask", strings.NewReader(body))
	req.Header.Set("Authorization", "bearer live") // the scheme is case-insensitive
	rec := httptest.NewRecorder()
	RelayHandler(b).ServeHTTP(rec, req)

	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d %q, want 200", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	var got Answer
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	wantAsked := []Form{Single(Question{Question: "Colours?", Options: []Option{{Label: "Red"}, {Label: "Blue", Description: "calm"}}, MultiSelect: true})}
	if diff := cmp.Diff(wantAsked, asker.questions()); diff != "" {
		t.Errorf("asked mismatch (-want +got):\n%s", diff)
	}
}

func TestRelayHandlerAskerError(t *testing.T) {
	b := NewBroker()
	b.Register("live", &fakeAsker{err: errors.New("the run is ending")})
	req := httptest.NewRequest(http.MethodPost, "/internal/ask", strings.NewReader(`{"question":"Q?"}`))
	req.Header.Set("Authorization", "Bearer live")
	rec := httptest.NewRecorder()
	RelayHandler(b).ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "the run is ending") {
		t.Errorf("got %d %q, want 409 with the asker's error", rec.Code, rec.Body.String())
	}
}
