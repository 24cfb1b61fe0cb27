package pushtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"parley/reach/webpush"
)

// TestForgedPushesAreRejected: a push whose VAPID token is not the
// expected key's valid token for this origin, or whose body does not
// decrypt, is refused with the RFC's status and never queued. The first
// case, a token minted by the test itself, proves the minting is right.
func TestForgedPushesAreRejected(t *testing.T) {
	keys, other := newKeys(t), newKeys(t)
	svc := New(t, keys.Public)
	sub := svc.Subscribe()
	now := time.Now().Unix()
	good := map[string]any{"aud": svc.URL, "exp": now + 3600, "sub": "mailto:ops@example.com"}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for k, v := range good {
			c[k] = v
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	es256 := map[string]any{"typ": "JWT", "alg": "ES256"}
	setAuth := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", v) }
	}
	tests := []struct {
		name string
		edit func(*http.Request)
		want int // 0: accepted
	}{
		{"a valid token minted here", setAuth(vapid(mint(t, es256, good, keys), keys)), 0},
		{"signed with another key", setAuth(vapid(mint(t, es256, good, other), keys)), 401},
		{"another key in k", setAuth(vapid(mint(t, es256, good, other), other)), 403},
		{"aud of another origin", setAuth(vapid(mint(t, es256, with("aud", "https://push.example.com"), keys), keys)), 401},
		{"aud with the endpoint's path", setAuth(vapid(mint(t, es256, with("aud", sub.Endpoint), keys), keys)), 401},
		{"expired", setAuth(vapid(mint(t, es256, with("exp", now-60), keys), keys)), 401},
		{"exp over 24 h ahead", setAuth(vapid(mint(t, es256, with("exp", now+25*3600), keys), keys)), 401},
		{"no exp", setAuth(vapid(mint(t, es256, with("exp", nil), keys), keys)), 401},
		{"no sub", setAuth(vapid(mint(t, es256, with("sub", nil), keys), keys)), 401},
		{"alg none", setAuth(vapid(mint(t, map[string]any{"alg": "none"}, good, keys), keys)), 401},
		{"no Authorization", func(r *http.Request) { r.Header.Del("Authorization") }, 401},
		{"the draft WebPush scheme", setAuth("WebPush " + mint(t, es256, good, keys)), 401},
		{"a tampered body", tamper, 400},
		{"no TTL", func(r *http.Request) { r.Header.Del("TTL") }, 400},
	}
	var wantPayloads []string
	rejected := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := webpush.Sender{Keys: keys, Subject: "mailto:ops@example.com",
				Client: &http.Client{Transport: rewrite(tt.edit)}}
			err := s.Send(t.Context(), sub, []byte(tt.name), "", "")
			var se *webpush.StatusError
			switch {
			case tt.want == 0 && err != nil:
				t.Fatalf("Send: %v, want it accepted", err)
			case tt.want == 0:
				wantPayloads = append(wantPayloads, tt.name)
			case !errors.As(err, &se):
				t.Fatalf("Send: %v, want the push service to answer %d", err, tt.want)
			case se.StatusCode != tt.want:
				t.Fatalf("Send: %v, want %d", err, tt.want)
			default:
				rejected++
				t.Logf("refused: %v", err)
			}
		})
	}
	if got := svc.Rejected(); got != rejected {
		t.Errorf("Rejected() = %d, want %d", got, rejected)
	}
	var got []string
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		p, err := svc.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		got = append(got, string(p.Payload))
	}
	if diff := cmp.Diff(wantPayloads, got); diff != "" {
		t.Errorf("queued pushes (-want +got):\n%s", diff)
	}
}

func newKeys(t *testing.T) webpush.Keys {
	t.Helper()
	k, err := webpush.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rewrite is a transport that edits each request before sending it.
type rewrite func(*http.Request)

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	rw(r)
	return http.DefaultTransport.RoundTrip(r)
}

// tamper flips one bit of the ciphertext.
func tamper(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	body[len(body)-20] ^= 1
	r.Body = io.NopCloser(bytes.NewReader(body))
}

func vapid(jwt string, k webpush.Keys) string {
	return "vapid t=" + jwt + ", k=" + k.Public
}

// mint makes a JWT with header and claims signed by k's private key
// (ES256: the raw r||s of an ECDSA P-256 signature of SHA-256, RFC 7518
// §3.4), independently of the sender's code.
func mint(t *testing.T, header, claims map[string]any, k webpush.Keys) string {
	t.Helper()
	b64 := base64.RawURLEncoding
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	d, err := b64.DecodeString(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, priv, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + b64.EncodeToString(sig)
}
