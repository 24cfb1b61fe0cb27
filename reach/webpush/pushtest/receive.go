package pushtest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxBody is the largest push message a push service must accept
// (RFC 8030 §7.2: at least 4096 bytes); a larger one is answered 413.
const maxBody = 4096

// serve is the push resource: POST /push/<id> (RFC 8030 §5).
func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/push/") {
		http.Error(w, "not a push resource", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	d := s.devices[strings.TrimPrefix(r.URL.Path, "/push/")]
	gone := d != nil && d.gone
	s.mu.Unlock()
	switch {
	case d == nil:
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	case gone:
		http.Error(w, "the subscription is gone", http.StatusGone)
		return
	}
	// RFC 8292 §4.2 (via §5 of RFC 8030): a missing or invalid token is
	// 401; a valid token of another key than the subscription's is 403.
	if status, err := s.checkVAPID(r.Header.Get("Authorization"), time.Now()); err != nil {
		s.reject(w, status, err.Error())
		return
	}
	p, status, err := s.read(r, d)
	if err != nil {
		s.reject(w, status, err.Error())
		return
	}
	s.push(p)
	w.Header().Set("Location", s.URL+"/message/"+strconv.FormatInt(p.At.UnixNano(), 36))
	w.WriteHeader(http.StatusCreated)
}

// read checks the headers of a push and decrypts its body.
func (s *Service) read(r *http.Request, d *device) (Push, int, error) {
	p := Push{Endpoint: s.URL + r.URL.Path, Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic"), At: time.Now()}
	// RFC 8030 §5.2: "An application server MUST include the TTL (Time-To-
	// Live) header field in its request for push message delivery."
	ttl, err := strconv.Atoi(r.Header.Get("TTL"))
	if err != nil || ttl < 0 {
		return p, http.StatusBadRequest, fmt.Errorf("the TTL header is missing or not a number: %q", r.Header.Get("TTL"))
	}
	p.TTL = ttl
	switch p.Urgency {
	case "", "very-low", "low", "normal", "high":
	default:
		return p, http.StatusBadRequest, fmt.Errorf("the Urgency header %q is not one of RFC 8030's", p.Urgency)
	}
	if len(p.Topic) > 32 {
		return p, http.StatusBadRequest, fmt.Errorf("the Topic header is longer than 32 characters")
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return p, http.StatusUnsupportedMediaType, fmt.Errorf("the Content-Encoding is %q, not aes128gcm", ce)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return p, http.StatusBadRequest, fmt.Errorf("read the body: %w", err)
	}
	if len(body) > maxBody {
		return p, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes", maxBody)
	}
	if p.Payload, err = decrypt(body, d); err != nil {
		return p, http.StatusBadRequest, err
	}
	return p, 0, nil
}
