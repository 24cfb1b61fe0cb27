package askuser

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxQuestionBytes bounds a relayed question's body.
const maxQuestionBytes = 256 << 10

// RelayHandler serves the relay endpoint that [Client] posts to. It accepts
// only POST with "Authorization: Bearer <token>" naming a run registered on
// b; it answers 403 for any other token, 413 for a body over 256 KiB, and
// 400 with the reason for a body that is not a valid [Form]. Otherwise it
// holds the request while the run's [Asker] waits for a person, then writes
// the [Answer] as JSON (200), or the Asker's error as text (409). The request
// ends early if the client goes away; the Asker sees that as its ctx ending.
func RelayHandler(b *Broker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed: use POST", http.StatusMethodNotAllowed)
			return
		}
		asker, ok := b.asker(bearerToken(r))
		if !ok {
			http.Error(w, "unknown or ended run token", http.StatusForbidden)
			return
		}
		f, status, err := readForm(w, r)
		if err != nil {
			http.Error(w, err.Error(), status)
			return
		}
		a, err := asker.Ask(r.Context(), f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// An encode error means the client is gone; nobody is left to tell.
		_ = json.NewEncoder(w).Encode(a)
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	// RFC 9110 §11.1: the auth scheme is case-insensitive.
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// readForm decodes and validates the body: a [Form], or a single
// [Question] (what older clients send), returning the status code to
// answer with when it fails.
func readForm(w http.ResponseWriter, r *http.Request) (Form, int, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQuestionBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return Form{}, http.StatusRequestEntityTooLarge,
				fmt.Errorf("question too large: the limit is %d bytes", maxQuestionBytes)
		}
		return Form{}, http.StatusBadRequest, fmt.Errorf("read question: %w", err)
	}
	var probe struct {
		Questions json.RawMessage `json:"questions"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return Form{}, http.StatusBadRequest, fmt.Errorf("invalid question JSON: %w", err)
	}
	var f Form
	if probe.Questions != nil {
		err = json.Unmarshal(body, &f)
	} else {
		var q Question
		err = json.Unmarshal(body, &q)
		f = Single(q)
	}
	if err != nil {
		return Form{}, http.StatusBadRequest, fmt.Errorf("invalid question JSON: %w", err)
	}
	if err := f.Validate(); err != nil {
		return Form{}, http.StatusBadRequest, fmt.Errorf("invalid question: %w", err)
	}
	return f, 0, nil
}
