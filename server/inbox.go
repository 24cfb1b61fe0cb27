package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"

	"parley/hub"
	"parley/runner"
	"parley/views"
)

// The inbox lists every pending ask of the viewer's projects. It stays live
// through the hub: each event that opens, closes or detaches an ask also
// pokes the topic of its project (hub.ProjectTopic), and every inbox socket
// subscribed to one of its viewer's projects re-reads the pending asks from
// Postgres and sends the difference. A poke carries no HTML, so what each
// viewer sees is decided by the same query as the page, never by the
// publisher; the cost is one query per open inbox per ask event.

func (s *Server) handleInbox() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		items, err := s.inboxItems(r.Context(), s.viewer(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		render(w, r, views.InboxPage(items))
	})
}

// inboxItems reads the viewer's pending asks, oldest first.
func (s *Server) inboxItems(ctx context.Context, v viewer) ([]views.InboxItem, error) {
	projects, err := s.projectsOf(ctx, v)
	if err != nil {
		return nil, err
	}
	ins, err := s.st.PendingInputsIn(ctx, projects)
	if err != nil {
		return nil, err
	}
	// Asks that expired lately stay listed, closed, for as long again as
	// the shortest expiry: nobody's question disappears unseen.
	expired, err := s.st.ExpiredInputsIn(ctx, projects, time.Now().Add(-expiredShownFor))
	if err != nil {
		return nil, err
	}
	items := make([]views.InboxItem, 0, len(expired)+len(ins))
	for _, in := range append(expired, ins...) {
		it := views.InboxItem{Ask: askView(in.SessionID, in.Payload, in.Detached),
			SessionTitle: in.SessionTitle, ProjectName: in.ProjectName, Asked: in.CreatedAt.Format("2006-01-02 15:04")}
		if in.Status != "pending" {
			it.Status = in.Status
			var ans runner.Response
			_ = json.Unmarshal(in.Answer, &ans)
			it.Outcome = outcomeText(resolution{Kind: in.Kind, Status: in.Status, Reason: ans.Reason})
		}
		items = append(items, it)
	}
	s.addDeliveries(ctx, items)
	return items, nil
}

// expiredShownFor is how long the inbox keeps listing an expired ask.
const expiredShownFor = 24 * time.Hour

// pendingOf counts the items still waiting for an answer.
func pendingOf(items []views.InboxItem) (n int, newest views.InboxItem) {
	for _, it := range items {
		if it.Status == "" {
			n++
			newest = it
		}
	}
	return n, newest
}

// askSummary is an ask in a line, for a notification.
func askSummary(a views.Ask) string {
	switch a.Kind {
	case runner.KindPermission:
		if a.Command != "" {
			return "Claude asks to run: " + oneLine(a.Command)
		}
		return "Claude asks to use " + a.Tool
	case runner.KindPlan:
		return "Claude asks you to review a plan"
	}
	if a.Title != "" {
		return "Claude asks: " + a.Title
	}
	if len(a.Questions) > 0 {
		return "Claude asks: " + oneLine(a.Questions[0].Question)
	}
	return "Claude asks you something"
}

// inboxConn is one page's inbox socket: the list (on the inbox page) or
// just the count (every other page's header).
type inboxConn struct {
	s     *Server
	conn  *websocket.Conn
	r     *http.Request
	v     viewer
	list  bool
	shown map[string]bool
	out   chan hub.Frame
	// looker records whether the inbox is on screen (reach), and
	// projects are the ones it shows.
	looker   looker
	projects []int64
}

func (s *Server) handleInboxWS() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, release, ok := s.upgradeWS(w, r, s.viewer(r).ID)
		if !ok {
			return
		}
		defer release()
		c := &inboxConn{s: s, conn: conn, r: r, v: s.viewer(r), list: r.URL.Query().Get("list") == "1",
			shown: map[string]bool{}, out: make(chan hub.Frame, 16), looker: newLooker(s, s.viewer(r).ID)}
		defer func() { c.looker.look(context.WithoutCancel(r.Context()), false, "", c.projects...) }()
		c.serve(r.Context())
	})
}

func (c *inboxConn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer c.conn.Close()
	projects, err := c.s.projectsOf(ctx, c.v)
	if err != nil {
		return
	}
	c.projects = projects
	pokes := make(chan struct{}, 1)
	var subs []*hub.Subscription
	done := make(chan struct{})
	n := 0
	for _, p := range projects {
		sub, err := c.s.hub.Subscribe(ctx, hub.ProjectTopic(p))
		if err != nil {
			break
		}
		subs = append(subs, sub)
		n++
		go func() { // ends when Unsubscribe (below) closes sub.C
			defer func() { done <- struct{}{} }()
			for range sub.C {
				select {
				case pokes <- struct{}{}:
				default: // a refresh is already due
				}
			}
			cancel() // dropped by the hub: the page reconnects
		}()
	}
	defer func() {
		for _, sub := range subs {
			c.s.hub.Unsubscribe(sub)
		}
		for range n {
			<-done
		}
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		c.readLoop(ctx)
	}()
	if err := c.writeLoop(ctx, pokes); err != nil && !errors.Is(err, context.Canceled) {
		c.s.log.Debug("inbox websocket closed", "err", err)
	}
	c.conn.Close()
	<-readerDone
}

func (c *inboxConn) writeLoop(ctx context.Context, pokes <-chan struct{}) error {
	ping := time.NewTicker(c.s.pingEvery()) // a keepalive, not a poll
	defer ping.Stop()
	if err := c.refresh(ctx, true); err != nil {
		return err
	}
	for {
		select {
		case <-pokes:
			if err := c.refresh(ctx, false); err != nil {
				return err
			}
		case f := <-c.out:
			if err := c.write(f.Data); err != nil {
				return err
			}
		case <-ping.C:
			// As on the session socket: a revoked sign-in stops receiving
			// within a ping period (answers are authorized one by one).
			// A database error is not a sign-out (see signInEnded): check again later.
			if c.s.signInEnded(ctx, c.r, c.v.ID) {
				c.conn.SetWriteDeadline(time.Now().Add(writeWait))
				return c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(closeSignedOut, reasonSignedOut))
			}
			c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refresh sends what changed since the last refresh: on the inbox page the
// list (whole the first time, then added and removed asks), everywhere the
// count.
func (c *inboxConn) refresh(ctx context.Context, full bool) error {
	items, err := c.s.inboxItems(ctx, c.v)
	if err != nil {
		return err
	}
	var parts []templ.Component
	// An entry is keyed by its id and status, so an ask that expires is
	// taken off and put back closed.
	key := func(it views.InboxItem) string { return it.ID + " " + it.Status }
	now := map[string]bool{}
	for _, it := range items {
		now[key(it)] = true
	}
	if c.list {
		if full {
			parts = append(parts, views.InboxList(items, true))
		} else {
			for k := range c.shown {
				if !now[k] {
					id, _, _ := strings.Cut(k, " ")
					parts = append(parts, views.InboxRemove(id))
				}
			}
			for _, it := range items {
				if !c.shown[key(it)] {
					parts = append(parts, views.InboxAdd(it))
				}
			}
		}
	}
	c.shown = now
	n, newest := pendingOf(items)
	text := ""
	if n > 0 {
		text = askSummary(newest.Ask) + " (" + newest.SessionTitle + ")"
	}
	parts = append(parts, views.InboxCount(n, newest, text))
	f, err := renderFrame(ctx, templ.Join(parts...))
	if err != nil {
		return err
	}
	return c.write(f.Data)
}

// readLoop takes answers from the cards in the inbox.
func (c *inboxConn) readLoop(ctx context.Context) {
	c.conn.SetReadLimit(maxWSFrame)
	c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		data, tooBig, err := readInput(c.conn)
		if err != nil {
			return
		}
		c.conn.SetReadDeadline(time.Now().Add(pongWait))
		if tooBig > 0 {
			c.toast("error", userMessage(errTooBig(tooBig, maxPromptBytes)))
			continue
		}
		if err := checkUTF8(data); err != nil {
			c.toast("error", userMessage(err))
			continue
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err == nil && m.Action == "visible" {
			c.looker.look(ctx, m.Visible, "", c.projects...)
			continue
		}
		if err != nil || m.Action != "answer" {
			continue // hello and the like: the inbox needs nothing from them
		}
		if err := c.s.answerAsk(ctx, c.r, "", data); err != nil {
			var he *httpError
			var ae *runner.AnswerError
			if !errors.As(err, &he) && !errors.As(err, &ae) {
				c.s.log.Error("inbox answer failed", "err", err)
			}
			c.toast("error", userMessage(err))
		}
	}
}

// toast queues a message for this page; it is dropped if the page is not reading.
func (c *inboxConn) toast(level, text string) {
	if f, err := renderFrame(context.Background(), views.Toast(level, text)); err == nil {
		select {
		case c.out <- f:
		default:
		}
	}
}

func (c *inboxConn) write(b []byte) error {
	c.conn.SetWriteDeadline(time.Now().Add(writeWait))
	return c.conn.WriteMessage(websocket.TextMessage, b)
}
