package server

import (
	"context"

	"parley/hub"
	"parley/runner"
)

// Stops ends runs and tells browsers, on every replica: an archived
// session keeps no process and its pages reload, an archived or deleted
// project's runs end, and a member who lost access stops receiving at once.
type Stops interface {
	StopSession(ctx context.Context, sessionID string)
	// StopRun ends the session's run only; its pages stay open.
	StopRun(ctx context.Context, sessionID string)
	StopProject(ctx context.Context, projectID int64)
	AccessChanged(ctx context.Context)
}

// localStops is Stops for one replica: its supervisor and hub.
type localStops struct {
	sup *runner.Supervisor
	hub *hub.Hub
}

func (l localStops) StopSession(_ context.Context, sessionID string) {
	l.sup.Stop(sessionID)
	l.hub.CloseSession(sessionID)
}

func (l localStops) StopRun(_ context.Context, sessionID string) { l.sup.Stop(sessionID) }

func (l localStops) StopProject(_ context.Context, projectID int64) {
	l.sup.StopProject(projectID)
	l.hub.Recheck()
}

func (l localStops) AccessChanged(context.Context) { l.hub.Recheck(); l.sup.CheckAuthors() }
