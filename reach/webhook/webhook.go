// Package webhook posts asks to an outgoing webhook: a JSON body signed
// with HMAC-SHA256 over a timestamp, for chat tools Parley does not speak.
//
// A receiver checks a delivery as Verify does: X-Parley-Signature is
// "v1=" + hex(HMAC-SHA256(secret, X-Parley-Timestamp + "." + body)), and the
// timestamp (unix seconds) is within five minutes of its clock.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"parley/reach"
)

// Headers a delivery carries.
const (
	HeaderTimestamp = "X-Parley-Timestamp"
	HeaderSignature = "X-Parley-Signature"
)

// MaxBody is the largest body Verify reads; an ask's body is at most a few
// KiB.
const MaxBody = 64 << 10

// Window is how far a delivery's timestamp may be from the receiver's
// clock, so a captured delivery cannot be replayed later.
const Window = 5 * time.Minute

// Errors Verify returns.
var (
	ErrSignature = errors.New("the webhook signature is missing or does not match the secret")
	ErrStale     = errors.New("the webhook timestamp is more than five minutes from now")
	ErrTooLarge  = errors.New("the webhook body is larger than a delivery can be")
)

// Event is the JSON body of a delivery: the message without its answer
// token and answer URL (a webhook's receiver is a channel, not a person
// the token was made for), and "event", which is "ask" or "answered".
type Event struct {
	Event string `json:"event"`
	reach.Message
}

// Post delivers m to url. client must be one that refuses private
// addresses and redirects (netguard.Client): the URL is the operator's
// choice, the network is not. A status other than 2xx is an error.
func Post(ctx context.Context, client *http.Client, url, secret string, m reach.Message) error {
	if client == nil {
		return errors.New("post webhook: no http client")
	}
	m.Token, m.AnswerURL = "", ""
	body, err := json.Marshal(Event{Event: m.Type, Message: m})
	if err != nil {
		return fmt.Errorf("encode webhook for ask %s: %w", m.InputID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("post webhook: %w", hideURL(err))
	}
	ts := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Parley-Webhook")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook to %s: %w", req.URL.Host, hideURL(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // lets the connection be reused
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the webhook at %s answered %s", req.URL.Host, resp.Status)
	}
	return nil
}

// hideURL drops the URL from a client error: a webhook's path is often its
// own secret, and errors end up in logs.
func hideURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Sign is the signature of body sent at ts (unix seconds) with secret.
func Sign(secret string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.", ts)
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reads r's body and returns it if it was signed with secret within
// Window of now; the signatures are compared in constant time.
func Verify(r *http.Request, secret string, now time.Time) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("verify webhook: no secret")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read webhook: %w", err)
	}
	if len(body) > MaxBody {
		return nil, ErrTooLarge
	}
	ts, err := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return nil, ErrSignature
	}
	if now.Sub(time.Unix(ts, 0)).Abs() > Window {
		return nil, ErrStale
	}
	if !hmac.Equal([]byte(r.Header.Get(HeaderSignature)), []byte(Sign(secret, ts, body))) {
		return nil, ErrSignature
	}
	return body, nil
}
