package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/audit"
	"parley/launch"
	"parley/store"
	"parley/views"
)

// maxProjectName bounds a project's name, in characters.
const maxProjectName = 100

// handleIndex is the home page: the board of the viewer's sessions
// (board.go) over the list of their projects (every project for an admin).
func (s *Server) handleIndex() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderProjects(w, r, http.StatusOK, "", "")
	})
}

func (s *Server) renderProjects(w http.ResponseWriter, r *http.Request, status int, name, msg string) {
	v := s.viewer(r)
	list, err := s.st.ProjectsFor(r.Context(), v.ID, v.Admin)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pv := views.ProjectsView{CanCreate: v.Admin, Name: name, Error: msg}
	if pv.Board, err = s.homeBoard(r.Context(), v); err != nil { // board.go
		s.fail(w, r, err)
		return
	}
	for _, p := range list {
		pv.Projects = append(pv.Projects, views.ProjectItem{ID: p.ID, Name: p.Name, Role: p.Role,
			Archived: p.ArchivedAt != nil, Sessions: p.Sessions})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = views.ProjectsPage(pv).Render(r.Context(), w)
}

// handleProjectCreate creates a project (admins) with its creator as owner.
func (s *Server) handleProjectCreate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := s.viewer(r)
		if !v.Admin {
			s.fail(w, r, &httpError{http.StatusForbidden, "Only admins can create projects."})
			return
		}
		name, err := checkProjectName(r.PostFormValue("name"))
		if err != nil {
			s.renderProjects(w, r, http.StatusBadRequest, r.PostFormValue("name"), err.Error())
			return
		}
		p, err := s.st.CreateProject(r.Context(), name, v.ID)
		if err == nil {
			_, err = launch.SyncWorkspace(s.cfg.DataDir, p)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	})
}

// handleProject is a project's page: its sessions and a form to start one.
func (s *Server) handleProject() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, v, role, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actView)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if can(role, v.Admin, actPrompt) {
			s.warm.Touch(p.ID) // a new session here takes a process started ahead
		}
		sessions, err := s.st.ListSessions(r.Context(), p.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		pv := views.ProjectView{ID: p.ID, Name: p.Name, Role: role, Archived: p.ArchivedAt != nil,
			CanPrompt: p.ArchivedAt == nil && can(role, v.Admin, actPrompt), CanManage: can(role, v.Admin, actManage)}
		for _, x := range sessions {
			pv.Sessions = append(pv.Sessions, views.SessionSummary{ID: x.ID, Title: x.Title, Status: x.Status,
				CreatedBy: x.CreatedBy, Updated: x.UpdatedAt.Format("2006-01-02 15:04")})
		}
		render(w, r, views.ProjectPage(pv))
	})
}

// handleSessionCreate starts a session in the project named by the path
// (POST /projects/{id}/sessions) or by the form's project_id (POST /sessions).
func (s *Server) handleSessionCreate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxPromptBytes+4096)
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, badRequest("The task is too long or the form could not be read."))
			return
		}
		id := r.PathValue("id")
		if id == "" {
			id = r.PostFormValue("project_id")
		}
		p, v, _, err := s.authorizeProjectAs(r.Context(), r, id, actPrompt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		sess, err := s.acts().Create(r.Context(), actorOf(v), p, r.PostFormValue("text"), nil)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, "/sessions/"+sess.ID, http.StatusSeeOther)
	})
}

// beginSession creates a session of p by v and sends its first prompt:
// what the page's form and the MCP tool create_session both do after
// authorizing. opts, if not nil, are the session's own Claude options.
func (s *Server) beginSession(ctx context.Context, p store.Project, v viewer, text string, opts *store.SessionOptions) (store.Session, error) {
	if err := s.allowSession(v.ID); err != nil {
		return store.Session{}, err
	}
	if err := s.sup.CheckRunFiles(); err != nil { // its run could not start: make no session
		return store.Session{}, s.refuseNoRoom(err)
	}
	if err := s.checkDisk(ctx, p.ID); err != nil { // over its disk quota: refused before a row is made
		return store.Session{}, err
	}
	if err := s.checkNewSessionBudget(ctx, p.ID); err != nil { // over its daily limit: refused before a row is made
		return store.Session{}, err
	}
	sess, err := s.createSession(ctx, p.ID, title(text), v, opts != nil) // with a process started ahead (warm.go)
	if err != nil {
		return sess, err
	}
	if opts != nil {
		if err := s.st.SetSessionOptions(ctx, sess.ID, *opts); err != nil {
			return sess, err
		}
	}
	return sess, s.prompt(ctx, sess, text, v.author())
}

func (s *Server) handleProjectRename() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		name, err := checkProjectName(r.PostFormValue("name"))
		if err != nil {
			s.fail(w, r, badRequest(err.Error()))
			return
		}
		if err := s.st.RenameProject(r.Context(), p.ID, name); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, settingsPath(p.ID), http.StatusSeeOther)
	})
}

func (s *Server) handleProjectArchive() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		archive := r.PostFormValue("archived") != "0"
		if err := s.st.ArchiveProject(r.Context(), p.ID, archive); err != nil {
			s.fail(w, r, err)
			return
		}
		if archive {
			s.stops.StopProject(r.Context(), p.ID) // its runs end on every replica
		}
		http.Redirect(w, r, projectPath(p.ID), http.StatusSeeOther)
	})
}

// handleProjectDelete deletes a project, its sessions and its managed
// workspace's database rows; the directory on disk is kept (it may hold
// work), and a new project never reuses its id.
func (s *Server) handleProjectDelete() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _, _, err := s.authorizeProjectAs(r.Context(), r, r.PathValue("id"), actManage)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if strings.TrimSpace(r.PostFormValue("confirm")) != p.Name {
			s.fail(w, r, badRequest("To delete the project, type its name exactly as shown."))
			return
		}
		// Every run of the project ends first, archived sessions' included.
		s.stops.StopProject(r.Context(), p.ID)
		s.removeWorktrees(r.Context(), p)
		if err := s.st.DeleteProject(r.Context(), p.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.fail(w, r, err)
			return
		}
		s.record(r, audit.Entry{Action: audit.ProjectDelete, ProjectID: p.ID, Target: p.Name})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
}

func checkProjectName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errors.New("Give the project a name.")
	case !utf8.ValidString(name) || strings.ContainsAny(name, "\r\n\t"):
		return "", errors.New("A project name is one line of text.")
	case utf8.RuneCountInString(name) > maxProjectName:
		return "", errors.New("A project name is at most 100 characters.")
	}
	return name, nil
}

func projectPath(id int64) string  { return "/projects/" + strconv.FormatInt(id, 10) }
func settingsPath(id int64) string { return projectPath(id) + "/settings" }
