// Package slacktest is a fake of Slack's Web API for tests, good enough
// for github.com/slack-go/slack: auth.test, chat.postMessage, chat.update
// and users.info. It checks the token, keeps the messages posted, records
// every call, and builds signed interaction requests as Slack sends them
// when someone clicks a button (Interaction).
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TeamID is the fake workspace's ID.
const TeamID = "T0PARLEY"

// Call is one Web API request the server answered.
type Call struct {
	Method  string          // "chat.postMessage", …
	Channel string          // as the request named it
	TS      string          // the message's timestamp (chat.postMessage: the one given)
	User    string          // users.info's user
	Text    string          // the fallback text
	Blocks  json.RawMessage // the blocks JSON as sent
	Error   string          // the error the server answered, "" when ok
	// ResponseType is what a post to a response URL asked for:
	// "ephemeral" (only the clicker sees it) or "in_channel".
	ResponseType string
	// ReplaceOriginal says a post to a response URL replaces the message.
	ReplaceOriginal bool
}

// Server is the fake Web API; give its URL as the connection's API URL.
type Server struct {
	URL string

	token string
	srv   *httptest.Server

	mu    sync.Mutex
	calls []Call
	users map[string]string // Slack user ID → e-mail
	msgs  map[string]bool   // channel ID + " " + ts of each message posted
	seq   int
}

// New starts a fake that accepts only token; it stops when t ends.
func New(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{token: token, users: map[string]string{}, msgs: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// AddUser makes a workspace member users.info knows; an empty email plays
// an app without the users:read.email scope.
func (s *Server) AddUser(id, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = email
}

// Calls returns the calls answered so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// ChannelID is the ID the fake gives a channel: "#parley" → "CPARLEY".
func ChannelID(name string) string {
	if n, ok := strings.CutPrefix(name, "#"); ok {
		return "C" + strings.ToUpper(n)
	}
	return name
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/actions/") {
		s.respond(w, r)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/")
	if err := r.ParseForm(); err != nil {
		reply(w, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	c := Call{Method: method, Channel: r.Form.Get("channel"), TS: r.Form.Get("ts"),
		User: r.Form.Get("user"), Text: r.Form.Get("text"), Blocks: rawJSON(r.Form.Get("blocks"))}
	resp := s.answer(r, &c)
	if c.Error != "" {
		resp = map[string]any{"ok": false, "error": c.Error}
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	reply(w, resp)
}

// answer does one call. Slack answers errors with 200 and ok false.
func (s *Server) answer(r *http.Request, c *Call) map[string]any {
	if c.Error = s.auth(r); c.Error != "" {
		return nil
	}
	switch c.Method {
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://parley-test.slack.com/", "team": "Parley Test",
			"user": "parley", "team_id": TeamID, "user_id": "U0PARLEYBOT", "bot_id": "B0PARLEY"}
	case "chat.postMessage":
		return s.post(c)
	case "chat.update":
		return s.update(c)
	case "users.info":
		return s.userInfo(c)
	}
	c.Error = "unknown_method"
	return nil
}

// auth accepts the token as Slack does: "Authorization: Bearer" or, as
// slack-go sends it, the form field token.
func (s *Server) auth(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		tok = r.PostForm.Get("token")
	}
	switch {
	case tok == "":
		return "not_authed"
	case tok != s.token:
		return "invalid_auth"
	}
	return ""
}

func (s *Server) post(c *Call) map[string]any {
	if c.Error = check(c); c.Error != "" {
		return nil
	}
	s.mu.Lock()
	s.seq++
	c.TS = fmt.Sprintf("1800000000.%06d", s.seq)
	ch := ChannelID(c.Channel)
	s.msgs[ch+" "+c.TS] = true
	s.mu.Unlock()
	return map[string]any{"ok": true, "channel": ch, "ts": c.TS,
		"message": map[string]any{"type": "message", "text": c.Text, "ts": c.TS}}
}

func (s *Server) update(c *Call) map[string]any {
	if c.Error = check(c); c.Error != "" {
		return nil
	}
	s.mu.Lock()
	known := s.msgs[ChannelID(c.Channel)+" "+c.TS]
	s.mu.Unlock()
	if !known {
		c.Error = "message_not_found"
		return nil
	}
	return map[string]any{"ok": true, "channel": ChannelID(c.Channel), "ts": c.TS, "text": c.Text}
}

func (s *Server) userInfo(c *Call) map[string]any {
	s.mu.Lock()
	email, ok := s.users[c.User]
	s.mu.Unlock()
	if !ok {
		c.Error = "user_not_found"
		return nil
	}
	profile := map[string]any{"real_name": c.User, "display_name": c.User}
	if email != "" {
		profile["email"] = email
	}
	return map[string]any{"ok": true, "user": map[string]any{
		"id": c.User, "team_id": TeamID, "name": strings.ToLower(c.User), "profile": profile}}
}

func reply(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// respond takes a post to a response URL: JSON, no token (the URL is the
// credential). Slack answers "ok" in plain text.
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	var m struct {
		Text            string          `json:"text"`
		Blocks          json.RawMessage `json:"blocks"`
		ResponseType    string          `json:"response_type"`
		ReplaceOriginal bool            `json:"replace_original"`
	}
	c := Call{Method: "response_url"}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		c.Error = "invalid_payload"
	}
	c.Text, c.Blocks, c.ResponseType, c.ReplaceOriginal = m.Text, m.Blocks, m.ResponseType, m.ReplaceOriginal
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	if c.Error != "" {
		http.Error(w, c.Error, http.StatusBadRequest)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
