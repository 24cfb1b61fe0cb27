package server

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"
)

// closeProxy stands between the browser and the web server: plain HTTP is
// forwarded, and each WebSocket is relayed message by message so that the
// test can end the browser's side with any close code (closeAll), as a
// server, a load balancer or a restart would.
type closeProxy struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	conns map[*websocket.Conn]*websocket.Conn // browser side → server side
}

func newCloseProxy(t *testing.T, backend string) *closeProxy {
	t.Helper()
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	p := &closeProxy{t: t, conns: map[*websocket.Conn]*websocket.Conn{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !websocket.IsWebSocketUpgrade(r) {
			rp.ServeHTTP(w, r)
			return
		}
		p.relay(w, r, "ws"+strings.TrimPrefix(backend, "http")+r.URL.RequestURI())
	}))
	t.Cleanup(func() { p.closeAll(websocket.CloseGoingAway, "test over"); p.srv.Close() })
	return p
}

func (p *closeProxy) URL() string { return p.srv.URL }

// relay connects the browser's socket to the server's, as the browser:
// the same cookie, Origin and Host.
func (p *closeProxy) relay(w http.ResponseWriter, r *http.Request, backend string) {
	h := http.Header{"Origin": {r.Header.Get("Origin")}, "Cookie": {r.Header.Get("Cookie")}, "Host": {r.Host}}
	up, resp, err := websocket.DefaultDialer.Dial(backend, h)
	if err != nil {
		status := http.StatusBadGateway
		if resp != nil {
			status = resp.StatusCode
		}
		http.Error(w, "backend refused", status)
		return
	}
	u := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	down, err := u.Upgrade(w, r, nil)
	if err != nil {
		up.Close()
		return
	}
	p.mu.Lock()
	p.conns[down] = up
	p.mu.Unlock()
	go pump(up, down)
	pump(down, up)
}

// pump copies messages from src to dst until either fails; a close from
// the server is passed on as it was.
func pump(src, dst *websocket.Conn) {
	defer dst.Close()
	for {
		kind, b, err := src.ReadMessage()
		if err != nil {
			if ce, ok := err.(*websocket.CloseError); ok {
				_ = dst.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(ce.Code, ce.Text), time.Now().Add(time.Second))
			}
			return
		}
		if dst.WriteMessage(kind, b) != nil {
			return
		}
	}
}

// closeAll ends every relayed socket: the browser gets a close frame with
// code and reason (none at all for 1006, as when a connection is lost).
func (p *closeProxy) closeAll(code int, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for down, up := range p.conns {
		if code != websocket.CloseAbnormalClosure {
			_ = down.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		}
		down.Close()
		up.Close()
		delete(p.conns, down)
	}
}

// countOpens makes the page count its session socket's opens in
// window.__opens (the header's inbox counter has its own socket).
const countOpens = `window.__opens = window.__opens || 0;
document.addEventListener('htmx:wsOpen', e => { if (!e.target.closest('.inbox-live')) window.__opens++; });
true`

// pollJS waits until the expression is true.
func pollJS(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(60*time.Second))
}

// rectsOverlap is a page function: do the boxes of a and b intersect?
const rectsOverlap = `function overlap(a, b) {
	if (!a || !b) return false;
	const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
	if (!r.width || !r.height || !s.width || !s.height) return false;
	return r.left < s.right && s.left < r.right && r.top < s.bottom && s.top < r.bottom;
}`
