package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"

	"parley/hub"
	"parley/runner"
	"parley/store"
	"parley/views"
)

// wsMessage is what a page sends: htmx's ws-send posts a form's fields as
// JSON (plus a HEADERS object), and the page's script sends hello.
type wsMessage struct {
	Action  string     `json:"action"`
	After   int64      `json:"after"`
	Text    string     `json:"text"`
	InputID string     `json:"input_id"`
	Choice  stringList `json:"choice"`
	Other   string     `json:"other"`
	// Visible is a page's visibility report (action "visible").
	Visible bool `json:"visible"`
	// Attach names the member's uploads a prompt carries (attach.go).
	Attach stringList `json:"attach"`

	raw []byte // the whole message, for the fields of an answer form
}

// stringList takes one string or a list: htmx sends a single checked box
// as a string and several as an array.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		if one != "" {
			*l = []string{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// readLoop handles the page's messages until the connection fails.
func (c *wsConn) readLoop(ctx context.Context) {
	c.conn.SetReadLimit(maxWSFrame)
	c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(pongWait))
	})
	for {
		data, tooBig, err := readInput(c.conn)
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.s.log.Info("websocket message too large", "session_id", c.sess.ID)
			}
			return
		}
		c.conn.SetReadDeadline(time.Now().Add(pongWait))
		if tooBig > 0 {
			c.toast("error", userMessage(errTooBig(tooBig, maxPromptBytes)))
			continue
		}
		m, err := parseWSMessage(data)
		if err != nil {
			c.toast("error", userMessage(err))
			continue
		}
		if err := c.handle(ctx, m); err != nil {
			var he *httpError
			var ae *runner.AnswerError
			if !errors.As(err, &he) && !errors.As(err, &ae) {
				c.s.log.Error("websocket action failed", "session_id", c.sess.ID, "action", m.Action, "err", err)
			}
			c.toast("error", userMessage(err))
		}
	}
}

func (c *wsConn) handle(ctx context.Context, m wsMessage) error {
	switch m.Action {
	case "hello":
		select {
		case c.hello <- max(m.After, 0):
			c.resumeAhead() // the page is open: its message will want the process
		default: // only the first hello counts
		}
		return nil
	case "typing":
		c.resumeAhead()
		return nil
	case "prompt":
		return c.prompt(ctx, m)
	case "answer":
		return c.answer(ctx, m)
	case "visible":
		c.looker.look(ctx, m.Visible, c.sess.ID, c.sess.ProjectID)
		return nil
	case "retry":
		return c.retry(ctx)
	case "switch":
		return c.switchMode(ctx, m) // modeswitch.go
	case "stop":
		a, err := c.s.actor(ctx, c.r)
		if err != nil {
			return err
		}
		return c.s.acts().Stop(ctx, a, c.sess.ID)
	}
	return badRequest("Unknown action " + quote(m.Action) + ".")
}

// stopTurn is Stop, from the page or the MCP tool interrupt.
func (s *Server) stopTurn(ctx context.Context, sess store.Session, by string) error {
	if err := s.runs.Interrupt(ctx, sess.ID, by); errors.Is(err, runner.ErrRunEnded) {
		return badRequest("Claude is not running in this session.")
	} else if err != nil {
		return err
	}
	return nil
}

func (c *wsConn) prompt(ctx context.Context, m wsMessage) error {
	a, err := c.s.actor(ctx, c.r)
	if err != nil {
		return err
	}
	if len(m.Attach) > 0 {
		return c.s.promptAttached(ctx, a, c.sess.ID, m.Text, m.Attach) // attach.go
	}
	_, err = c.s.acts().Prompt(ctx, a, c.sess.ID, m.Text)
	return err
}

func (c *wsConn) answer(ctx context.Context, m wsMessage) error {
	return c.s.answerAsk(ctx, c.r, c.sess.ID, m.raw)
}

// whyClosed explains why an ask cannot be answered.
func (s *Server) whyClosed(ctx context.Context, sessionID, inputID string) error {
	in, err := s.st.GetInput(ctx, inputID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && in.SessionID != sessionID) {
		return badRequest("There is no such question in this session.")
	}
	if err != nil {
		return err
	}
	if in.Status == "answered" || in.Status == "denied" {
		return badRequest("This question was already answered.")
	}
	if in.Status != "pending" {
		return badRequest("This question is closed (" + strings.ReplaceAll(in.Status, "_", " ") + ").")
	}
	return badRequest("The Claude process that asked has ended, so the answer cannot reach it.")
}

func (c *wsConn) toast(level, text string) {
	f, err := renderFrame(context.Background(), views.Toast(level, text))
	if err == nil {
		c.send(f)
	}
}

// userMessage is the sentence a page shows for err.
func userMessage(err error) string {
	var he *httpError
	if errors.As(err, &he) {
		return he.msg
	}
	var ae *runner.AnswerError
	if errors.As(err, &ae) {
		return ae.Error()
	}
	if databaseAway(err) { // fault_errors.go
		return msgDatabaseAway
	}
	return "That did not work; try again, and reload the page if it keeps failing."
}

// renderFrame renders a component into a frame that shows no event.
func renderFrame(ctx context.Context, c templ.Component) (hub.Frame, error) {
	var buf bytes.Buffer
	err := c.Render(ctx, &buf)
	return hub.Frame{Data: buf.Bytes()}, err
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
