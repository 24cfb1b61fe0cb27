package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"parley/runner/fakeapi"
)

// TestFaultPageOfflineWhenAccessEnds: the sign-in ends, or the member is
// removed, while the page's connection is down. The reconnect handshake is
// then refused, which a browser reports as a lost connection (1006) like
// any other; the page finds out why with a plain request, says so, and
// stops reconnecting. A page whose server is merely away keeps trying
// (TestFaultPageReconnectsAfterAnyClose).
func TestFaultPageOfflineWhenAccessEnds(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Hello there."}}, envOptions{quiet: true})
	s := e.newSession()
	proxy := newCutProxy(t, strings.TrimPrefix(e.web.URL, "http://"))
	for _, tc := range []struct {
		name, want string
		end        func(u *testUser)
		link       bool
	}{
		{"signed out", reasonSignedOut, func(u *testUser) {
			if err := e.st.RevokeAuthSession(t.Context(), tokenHash(u.Cookie)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"removed", reasonRemoved, func(u *testUser) {
			if err := e.st.RemoveMember(t.Context(), e.project.ID, u.ID); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := e.member("offline-"+strings.ReplaceAll(tc.name, " ", "")+"@example.com", "Offline "+tc.name, roleMember)
			ctx := browser(t)
			e.signInBrowser(t, ctx, u)
			step(t, ctx, "open the session through the proxy",
				chromedp.Navigate(proxy.URL()+"/sessions/"+s.ID),
				pollJS(`document.getElementById('conn').dataset.state === 'live'`),
				chromedp.Evaluate(countOpens, nil))
			tc.end(u) // the ping check has not run yet: the socket is still open
			proxy.cut()
			wantPageStopped(t, ctx, tc.want, tc.link, "it stops trying", "the refusal")
		})
	}
}
