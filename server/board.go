package server

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"parley/board"
	"parley/hub"
	"parley/store"
	"parley/views"
)

// Sessions at a glance (package board): a project's sidebar on the session
// page, the home page's board, and their sockets (board_ws.go). Every
// list is read for its person by the same queries, at first and at each
// poke; a poke names a session and nothing else.

// hubPages is the hub as the board's Feed sees it.
type hubPages struct{ h *hub.Hub }

func (p hubPages) Watches(topic string) bool { return p.h.Watches(topic) }

func (p hubPages) Poke(topic, sessionID string) { p.h.Publish(topic, hub.Frame{About: sessionID}) }

// WatchBoards keeps the sidebars and boards open here live until ctx ends
// (board.Feed): serve runs it beside the hub.
func (s *Server) WatchBoards(ctx context.Context) error { return s.boardFeed().Run(ctx) }

// boardFeed is the server's board feed (made in New).
func (s *Server) boardFeed() *board.Feed { return s.boards }

// personOf is the viewer as the board sees them.
func personOf(v viewer) board.Person { return board.Person{ID: v.ID, Admin: v.Admin} }

// handleSidebar is a project's sidebar (a fragment static/nav.js loads);
// current, the session open in the page, is marked read.
func (s *Server) handleSidebar() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, role, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		sb, err := s.sidebar(r.Context(), p, v, role, s.currentIn(r.Context(), r, v, p.ID))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		render(w, r, views.Sidebar(sb))
	})
}

// currentIn is the request's current session if it is one of the
// project's, marked read by v; "" otherwise.
func (s *Server) currentIn(ctx context.Context, r *http.Request, v viewer, projectID int64) string {
	id := r.URL.Query().Get("current")
	if !validUUID(id) {
		return ""
	}
	sess, err := s.st.GetSession(ctx, id)
	if err != nil || sess.ProjectID != projectID {
		return ""
	}
	if err := s.st.MarkRead(ctx, v.ID, id); err != nil {
		s.log.Warn("mark session read", "session_id", id, "err", err)
	}
	return id
}

// sidebar reads a project's sidebar as v sees it.
func (s *Server) sidebar(ctx context.Context, p store.Project, v viewer, role, current string) (board.Sidebar, error) {
	rows, total, err := s.st.SidebarSessions(ctx, p.ID, v.ID, board.SidebarLimit)
	if err != nil {
		return board.Sidebar{}, err
	}
	sb := board.Sidebar{ProjectID: p.ID, Project: p.Name, Current: current, Total: total,
		CanStart: p.ArchivedAt == nil && can(role, v.Admin, actPrompt)}
	for _, r := range rows {
		sb.Items = append(sb.Items, board.ItemOf(r, personOf(v), current))
	}
	if can(role, v.Admin, actAnswer) {
		if sb.NeedsYou, err = s.st.NeedsCount(ctx, p.ID); err != nil {
			return board.Sidebar{}, err
		}
	}
	return sb, nil
}

// boardView reads the home page's board as v sees it.
func (s *Server) boardView(ctx context.Context, v viewer) (views.BoardView, []int64, error) {
	list, err := s.st.ProjectsFor(ctx, v.ID, v.Admin)
	if err != nil {
		return views.BoardView{}, nil, err
	}
	var bv views.BoardView
	ids := make([]int64, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ID)
		bp := views.BoardProject{ID: p.ID, Name: p.Name}
		bv.Projects = append(bv.Projects, bp)
		if p.ArchivedAt == nil && can(p.Role, v.Admin, actPrompt) {
			bv.CanStart = append(bv.CanStart, bp)
		}
	}
	b, err := s.board(ctx, v, ids)
	bv.Board = b
	return bv, ids, err
}

// board reads the sessions of the projects that a board shows to v.
func (s *Server) board(ctx context.Context, v viewer, projects []int64) (board.Board, error) {
	now := time.Now()
	rows, err := s.st.BoardSessions(ctx, projects, v.ID, now.Add(-board.RecentFor), board.BoardLimit)
	if err != nil {
		return board.Board{}, err
	}
	items := make([]board.Item, 0, len(rows))
	for _, r := range rows {
		items = append(items, board.ItemOf(r, personOf(v), ""))
	}
	return board.NewBoard(items, now), nil
}

// handleSearch sends the board's search to the chosen project's history.
func (s *Server) handleSearch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, _, err := s.authorizeProjectAs(r.Context(), r, r.URL.Query().Get("project"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, projectPath(p.ID)+"/history?q="+url.QueryEscape(r.URL.Query().Get("q")), http.StatusSeeOther)
	})
}

// homeBoard is the home page's board for v.
func (s *Server) homeBoard(ctx context.Context, v viewer) (*views.BoardView, error) {
	bv, _, err := s.boardView(ctx, v)
	if err != nil {
		return nil, err
	}
	return &bv, nil
}
