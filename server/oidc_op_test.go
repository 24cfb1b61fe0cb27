package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"parley/oidclogin"
	"parley/store"
)

// testOP is a real OpenID provider for the tests: zitadel/oidc's OP (the
// OpenID-certified pkg/op, with its example login page and in-memory
// storage) on 127.0.0.1, with people whose groups a test changes, and
// switches that make it answer wrongly (another audience, an ID token
// already expired).
type testOP struct {
	*storage.Storage
	URL string // the issuer

	mu       sync.Mutex
	users    map[string]*storage.User // by id
	groups   map[string][]string      // by user id
	redirect string                   // Parley's callback, registered for the client
	audience string                   // "" = the client's id; else the token endpoint's ID tokens are for this one
	lifetime time.Duration            // of ID tokens; 0 = an hour
	// lean: the ID token carries no e-mail or profile (the OP's default,
	// OpenID Connect Core 5.4): they come from the userinfo endpoint.
	lean bool
	// issued is every refresh token the token endpoint gave, in order
	// (recordTokens, oidc_sealed_test.go).
	issued []string
}

const (
	opClientID     = "parley"
	opClientSecret = "parley-secret"
	opPassword     = "correct horse"
)

// startOP starts a provider with alice@example.com (groups eng and
// admins-not) and mallory@evil.example.
func startOP(t testing.TB) *testOP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &testOP{URL: "http://" + ln.Addr().String(), users: map[string]*storage.User{}, groups: map[string][]string{}}
	o.addUser("alice", "alice@example.com", "eng")
	o.addUser("mallory", "mallory@evil.example", "eng")
	client := storage.WebClient(opClientID, opClientSecret, "http://placeholder/")
	o.Storage = storage.NewStorageWithClients(opUsers{o}, map[string]*storage.Client{opClientID: client})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: o.recordTokens(o.rewriteTokens(exampleop.SetupServer(o.URL, o, nil, false)))}}
	srv.Start()
	t.Cleanup(srv.Close)
	return o
}

func (o *testOP) addUser(name, email string, groups ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.users[name] = &storage.User{ID: name, Username: name, Password: opPassword, FirstName: name, LastName: "Tester",
		Email: email, EmailVerified: true}
	o.groups[name] = groups
}

func (o *testOP) setGroups(user string, groups ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.groups[user] = groups
}

func (o *testOP) set(f func(o *testOP)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

// provider is Parley's side, for newEnv: refresh is how often sign-ins
// are re-checked; change edits the config.
func (o *testOP) provider(refresh time.Duration, change func(*oidclogin.Config)) func(*store.Store, *slog.Logger) *oidclogin.Provider {
	return func(st *store.Store, log *slog.Logger) *oidclogin.Provider {
		key, sealKey := make([]byte, 32), make([]byte, 32)
		rand.Read(key)
		rand.Read(sealKey)
		c := oidclogin.Config{Issuer: o.URL, ClientID: opClientID, ClientSecret: opClientSecret, Name: "Test OP",
			Domains: []string{"example.com"}, AdminGroup: "admins", GroupsClaim: "groups",
			Grants:  []oidclogin.Grant{{Group: "eng", Project: "Test project", Role: roleMember}},
			Refresh: refresh, PasswordLogin: true, Key: key, SealKey: sealKey}
		if change != nil {
			change(&c)
		}
		p := oidclogin.New(c, st, log)
		p.Deactivated = st.UserDeactivated // as serve wires it
		return p
	}
}

// GetClientByClientID gives the client Parley's callback and the test's
// ID token lifetime, and puts the profile and e-mail in the ID token.
func (o *testOP) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := o.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return opClient{Client: c, o: o}, nil
}

// SetUserinfoFromRequest adds the person's groups to the ID token.
func (o *testOP) SetUserinfoFromRequest(ctx context.Context, info *zoidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	if err := o.Storage.SetUserinfoFromRequest(ctx, info, r, scopes); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	info.AppendClaims("groups", append([]string{}, o.groups[r.GetSubject()]...))
	return nil
}

type opClient struct {
	op.Client
	o *testOP
}

func (c opClient) RedirectURIs() []string {
	c.o.mu.Lock()
	defer c.o.mu.Unlock()
	return []string{c.o.redirect}
}

func (c opClient) IDTokenLifetime() time.Duration {
	c.o.mu.Lock()
	defer c.o.mu.Unlock()
	if c.o.lifetime != 0 {
		return c.o.lifetime
	}
	return time.Hour
}

func (c opClient) IDTokenUserinfoClaimsAssertion() bool {
	c.o.mu.Lock()
	defer c.o.mu.Unlock()
	return !c.o.lean
}

// opUsers is the provider's user store: the testOP's people.
type opUsers struct{ o *testOP }

func (u opUsers) GetUserByID(id string) *storage.User {
	u.o.mu.Lock()
	defer u.o.mu.Unlock()
	return u.o.users[id]
}

func (u opUsers) GetUserByUsername(name string) *storage.User { return u.GetUserByID(name) }

func (u opUsers) ExampleClientID() string { return "service" }

// rewriteTokens, while audience is set, makes the token endpoint answer
// with an ID token for another client: the OP's own token with aud and
// azp changed, signed again with the OP's signing key. (The OP always
// adds the requesting client to aud, as OpenID Connect Core 2 asks, so
// only its key can make a token that leaves it out.)
func (o *testOP) rewriteTokens(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		aud := o.audience
		o.mu.Unlock()
		if aud == "" || r.URL.Path != "/oauth/token" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if raw, ok := body["id_token"].(string); ok {
			signed, err := o.resign(r.Context(), raw, aud)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			body["id_token"] = signed
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	})
}

// resign changes an ID token's audience and signs it with the OP's key.
func (o *testOP) resign(ctx context.Context, raw, aud string) (string, error) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("id token has %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var claims map[string]any
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", err
	}
	claims["aud"], claims["azp"], claims["client_id"] = []string{aud}, aud, aud
	payload, _ = json.Marshal(claims)
	key, err := o.Storage.SigningKey(ctx)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.SignatureAlgorithm(), Key: key.Key()},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.ID()))
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
