package views

import (
	"context"
	"encoding/json"
)

// User is the signed-in user a page is rendered for, taken from the
// request's context (see WithUser): the header shows them, and forms carry
// their sign-in's CSRF token.
type User struct {
	ID          int64 // the page's script tells the user's own answers by it
	Name, Email string
	Admin       bool
	CSRF        string
}

type userKey struct{}

// WithUser returns ctx carrying u for the components rendered with it.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// CurrentUser returns the user ctx carries, if any.
func CurrentUser(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

func csrfToken(ctx context.Context) string {
	u, _ := CurrentUser(ctx)
	return u.CSRF
}

// csrfHeaders is the hx-headers value that makes every htmx request carry
// the CSRF token.
func csrfHeaders(ctx context.Context) string {
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": csrfToken(ctx)})
	return string(b)
}
