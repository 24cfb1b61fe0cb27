package board

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"parley/store"
)

// Topic is the hub topic of a project's sidebars and boards. It is not a
// session's topic (its name starts as hub.ProjectTopic's, "project:"), so
// it carries no presence.
func Topic(projectID int64) string {
	return "project:" + strconv.FormatInt(projectID, 10) + ":sessions"
}

// Pages are the pages open on this replica, by topic (the hub).
type Pages interface {
	// Watches says whether a page here subscribes to topic.
	Watches(topic string) bool
	// Poke tells the topic's pages that the session changed ("" = any).
	Poke(topic, sessionID string)
}

// Feed pokes the sidebars and boards on this replica when the database
// says one of their sessions changed (store.SessionsChannel, on every
// replica alike): the poke names the session, never what changed, and
// each page reads what its person may see.
type Feed struct {
	st    *store.Store
	pages Pages
	log   *slog.Logger
	// ready, if set, is called each time the LISTEN is in place (tests).
	ready func()
}

// NewFeed returns a Feed; Run must be running for it to poke.
func NewFeed(st *store.Store, pages Pages, log *slog.Logger) *Feed {
	return &Feed{st: st, pages: pages, log: log}
}

// OnReady sets a function called each time the feed listens anew.
func (f *Feed) OnReady(ready func()) { f.ready = ready }

// The backoff of listening again after the connection was lost.
const (
	relistenFirst = 100 * time.Millisecond
	relistenMax   = 5 * time.Second
)

// Run listens until ctx ends. A lost connection is opened again with a
// capped backoff; every page then refreshes all it shows, since changes
// may have been missed meanwhile.
func (f *Feed) Run(ctx context.Context) error {
	wait := relistenFirst
	for first := true; ; first = false {
		ready := func() {
			wait = relistenFirst
			if !first {
				f.pokeAll()
			}
			if f.ready != nil {
				f.ready()
			}
		}
		err := f.st.Listen(ctx, []string{store.SessionsChannel}, ready, func(_, payload string) { f.notified(payload) })
		if ctx.Err() != nil {
			return nil
		}
		f.log.Warn("board notifications lost; listening again", "err", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		wait = min(wait*2, relistenMax)
	}
}

// notified pokes the project's topic about the session, if anything here
// watches it: "project_id session_id".
func (f *Feed) notified(payload string) {
	pid, sid, ok := strings.Cut(payload, " ")
	id, err := strconv.ParseInt(pid, 10, 64)
	if !ok || err != nil {
		return
	}
	if t := Topic(id); f.pages.Watches(t) {
		f.pages.Poke(t, sid)
	}
}

// pokeAll has every page here refresh all it shows. The hub has no list
// of topics; the pages' topics are the projects', so each watched one is
// found from the projects table.
func (f *Feed) pokeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids, err := f.st.ProjectIDsFor(ctx, 0, true)
	if err != nil {
		f.log.Warn("refresh boards", "err", err)
		return
	}
	for _, id := range ids {
		if t := Topic(id); f.pages.Watches(t) {
			f.pages.Poke(t, "")
		}
	}
}
