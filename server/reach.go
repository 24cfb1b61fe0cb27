package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"

	"parley/act"
	"parley/reach"
	"parley/reach/reachweb"
)

// Reach is what the server needs of package reach (issue 30): its
// Reacher, poked when an ask opens or closes, the token answers and the
// push devices' API. nil Reach: asks reach only open pages.
type Reach struct {
	Reacher *reach.Reacher
	Answers reachweb.Answers
	Devices reachweb.Devices
	// Slack takes Slack's interactions (POST /slack/interactions/{project});
	// nil = none.
	Slack http.Handler
	// Check refuses a URL Parley must not post to (a project's webhook),
	// in a sentence.
	Check func(string) error
	// SlackAPI replaces https://slack.com/api when the settings page
	// tries a project's Slack token (tests).
	SlackAPI string
}

// pokeReach tells the Reacher an ask opened, closed or detached.
func (s *Server) pokeReach() {
	if s.reach != nil && s.reach.Reacher != nil {
		s.reach.Reacher.Poke()
	}
}

// looker records what one page socket shows visibly, for reach's rule
// that nobody is pinged while someone who may answer is looking.
type looker struct {
	s    *Server
	id   string
	user int64
}

func newLooker(s *Server, user int64) looker {
	b := make([]byte, 12)
	rand.Read(b)
	return looker{s: s, id: hex.EncodeToString(b), user: user}
}

// look records the page's report for the session (or, sessionID "", the
// inbox of each project).
func (l looker) look(ctx context.Context, visible bool, sessionID string, projects ...int64) {
	if l.s.reach == nil {
		return
	}
	for _, p := range projects {
		id := l.id
		if sessionID == "" {
			id += ":" + strconv.FormatInt(p, 10)
		}
		if err := l.s.st.Look(ctx, id, l.user, p, sessionID, visible); err != nil {
			l.s.log.Debug("visibility report", "err", err)
		}
	}
	if visible {
		return
	}
	l.s.pokeReach() // someone stopped looking: a suppressed ask may go out now
}

// Acts is the service pages and MCP act through: reach answers through
// it too.
func (s *Server) Acts() act.Service { return s.acts() }
