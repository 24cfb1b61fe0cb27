package webpush

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	webpushgo "github.com/SherClockHolmes/webpush-go"
)

// MaxPayload is the most bytes of payload Send takes. A push message is one
// aes128gcm record of at most 4096 bytes (RFC 8291 §4), of which the
// header (86 bytes), the padding delimiter and the AEAD tag take about 100;
// the rest of the margin leaves room for a payload format that grows. The
// core trims an ask's body to fit.
const MaxPayload = 3000

// DefaultTTL is the TTL, in seconds, of a Sender whose TTL is zero: an
// ask's default timeout, after which a push is of no use.
const DefaultTTL = 300

// ErrGone is wrapped by Send's error when the push service answered 404
// or 410: the subscription no longer exists and its device should be
// dropped (RFC 8030 §7.3).
var ErrGone = errors.New("the push subscription is gone")

// ErrPayloadTooLarge is wrapped by Send's error for a payload over
// MaxPayload.
var ErrPayloadTooLarge = errors.New("push payload too large")

// StatusError is Send's error for an answer other than 2xx, 404 and 410.
type StatusError struct {
	Host       string // the push service's host
	StatusCode int
	Body       string // the start of the answer's body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("push service %s answered %d %s: %s",
		e.Host, e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// Sender sends pushes signed with Keys. Subject is the contact the VAPID
// token names ("mailto:ops@example.com" or an https URL, RFC 8292 §2.1).
// Client makes the requests: build it with netguard.Client, so that an
// endpoint cannot point Parley inside its own network. TTL is how long, in
// seconds, the push service keeps a push for a device that is offline
// (zero: DefaultTTL).
type Sender struct {
	Keys    Keys
	Subject string
	Client  *http.Client
	TTL     int
}

// Send encrypts payload for sub and posts it to sub's endpoint. urgency is
// "", "very-low", "low", "normal" or "high"; topic, if not "", makes the
// push service replace a pending push with the same topic (see TopicFor).
// It returns nil when the push service accepted the push (2xx), an error
// wrapping ErrGone for 404/410, a *StatusError for any other answer.
func (s *Sender) Send(ctx context.Context, sub Subscription, payload []byte, urgency, topic string) error {
	opts, err := s.options(urgency, topic)
	if err != nil {
		return err
	}
	if err := sub.Validate(); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("push payload of %d bytes, at most %d fit: %w", len(payload), MaxPayload, ErrPayloadTooLarge)
	}
	wsub := &webpushgo.Subscription{Endpoint: sub.Endpoint,
		Keys: webpushgo.Keys{P256dh: sub.P256dh, Auth: sub.Auth}}
	resp, err := webpushgo.SendNotificationWithContext(ctx, payload, wsub, opts)
	if err != nil {
		return fmt.Errorf("send push to %s: %w", host(sub.Endpoint), err)
	}
	return answer(resp, host(sub.Endpoint))
}

// options checks the Sender and the headers and builds webpush-go's options.
func (s *Sender) options(urgency, topic string) (*webpushgo.Options, error) {
	if s.Client == nil {
		return nil, errors.New("webpush sender has no http client")
	}
	if err := s.Keys.check(); err != nil {
		return nil, err
	}
	var subscriber string
	switch {
	case strings.HasPrefix(s.Subject, "mailto:") && len(s.Subject) > len("mailto:"):
		// webpush-go prefixes "mailto:" to every subject that is not https.
		subscriber = strings.TrimPrefix(s.Subject, "mailto:")
	case strings.HasPrefix(s.Subject, "https://"):
		subscriber = s.Subject
	default:
		return nil, fmt.Errorf("the VAPID subject must be a mailto: or https: URL, not %q", s.Subject)
	}
	switch urgency {
	case "", "very-low", "low", "normal", "high":
	default:
		return nil, fmt.Errorf("push urgency %q is not one of very-low, low, normal, high", urgency)
	}
	if !validTopic(topic) {
		return nil, fmt.Errorf("push topic %q is not at most 32 base64url characters", topic)
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &webpushgo.Options{HTTPClient: s.Client, Subscriber: subscriber, Topic: topic, TTL: ttl,
		Urgency: webpushgo.Urgency(urgency), VAPIDPublicKey: s.Keys.Public, VAPIDPrivateKey: s.Keys.Private}, nil
}

// answer reads the push service's answer (RFC 8030 §5: 201 Created) and
// closes it.
func answer(resp *http.Response, host string) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusNotFound || c == http.StatusGone:
		return fmt.Errorf("push service %s answered %s: %w", host, resp.Status, ErrGone)
	default:
		return &StatusError{Host: host, StatusCode: c, Body: strings.TrimSpace(string(body))}
	}
}

// TopicFor turns any key (an ask's id) into a valid Topic header value
// (RFC 8030 §5.4: at most 32 characters of the base64url alphabet), so
// that a later push for the same key replaces one not yet delivered.
func TopicFor(key string) string {
	sum := sha256.Sum256([]byte(key))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}

func validTopic(t string) bool {
	if len(t) > 32 {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// host is the endpoint's host, which errors name instead of the endpoint:
// its path identifies the device.
func host(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil {
		return u.Host
	}
	return "?"
}
