// Package mcpsessions is the backend of Parley's MCP tools (package mcpapi):
// it finds projects and sessions, Claude Code sessions on disk, and acts
// on sessions through the service the pages use (package act), with the
// same rules.
package mcpsessions

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"parley/act"
	"parley/hub"
	"parley/mcpapi"
	"parley/runner"
	"parley/store"
)

// Backend implements mcpapi.Sessions.
type Backend struct {
	acts act.Service
	st   *store.Store
	hub  *hub.Hub
	disk Disk
	log  *slog.Logger
}

// Disk locates a project's Claude Code state: the CLAUDE_CONFIG_DIR of its
// runs and its workspace.
type Disk struct {
	ConfigDir func(store.Project) string
	Workspace func(store.Project) string
}

// New returns the backend over the service acts, the store, the hub that
// reports a session's new events, and the project's paths on disk.
func New(acts act.Service, st *store.Store, h *hub.Hub, disk Disk, log *slog.Logger) *Backend {
	return &Backend{acts: acts, st: st, hub: h, disk: disk, log: log}
}

var _ mcpapi.Sessions = (*Backend)(nil)

func actorOf(u mcpapi.User) act.Actor { return act.Actor{ID: u.ID, Name: u.Name, Admin: u.Admin} }

// mcpError turns the page's refusals into the client's.
func mcpError(err error) error {
	var rf act.Refusal
	switch {
	case err == nil:
		return nil
	case errors.Is(err, act.ErrNotFound):
		return mcpapi.ErrNotFound
	case errors.As(err, &rf):
		return &mcpapi.Error{Msg: rf.Refusal()}
	}
	var ae *mcpapi.Error
	if errors.As(err, &ae) {
		return err
	}
	var re *runner.AnswerError
	if errors.As(err, &re) {
		return &mcpapi.Error{Msg: re.Error()} // an answer that does not fit its ask
	}
	return err
}

// findProject returns the project named (by id or name) that u may do what
// in, and u's role there.
func (b *Backend) findProject(ctx context.Context, u mcpapi.User, name string, what act.Action) (store.Project, string, error) {
	list, err := b.st.ProjectsFor(ctx, u.ID, u.Admin)
	if err != nil {
		return store.Project{}, "", err
	}
	name = strings.TrimSpace(name)
	for _, p := range list {
		if strconv.FormatInt(p.ID, 10) == name || strings.EqualFold(p.Name, name) {
			role, err := b.acts.Access(ctx, actorOf(u), p.ID, what)
			if err != nil {
				return store.Project{}, role, mcpError(err)
			}
			return p.Project, role, nil
		}
	}
	return store.Project{}, "", mcpapi.FieldError("project", "no project %q among yours", name)
}
