// Package server is Parley's HTTP surface: pages, the session WebSocket,
// the ask relay, and the hub that fans a session's events out to browsers.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"parley/askuser"
	"parley/runner"
	"parley/store"
)

// Config is the server's part of Parley's configuration.
type Config struct {
	DataDir         string        // workspaces and per-project CLI config live here
	ClaudeConfigDir string        // CLAUDE_CONFIG_DIR for every run; "" = one per project
	AskTimeout      time.Duration // how long an ask_user question waits
	AskUserEnabled  bool          // server-wide switch for the ask_user tool
	RelayURL        string        // loopback URL the ask relay listens on
}

// Server holds what the handlers need.
type Server struct {
	cfg     Config
	st      *store.Store
	sup     *runner.Supervisor
	hub     *Hub
	broker  *askuser.Broker
	log     *slog.Logger
	project store.Project // the default project, until teams land
}

// Deps are the server's collaborators.
type Deps struct {
	Store      *store.Store
	Supervisor *runner.Supervisor
	Hub        *Hub
	Broker     *askuser.Broker
	Log        *slog.Logger
}

// New returns a Server for the default project.
func New(ctx context.Context, cfg Config, d Deps) (*Server, error) {
	p, err := d.Store.EnsureDefaultProject(ctx, "Default project", "")
	if err != nil {
		return nil, fmt.Errorf("default project: %w", err)
	}
	return &Server{cfg: cfg, st: d.Store, sup: d.Supervisor, hub: d.Hub, broker: d.Broker, log: d.Log, project: p}, nil
}

// NewPublisher returns the runner.Publisher that renders each event once and
// hands the frame to the hub.
func NewPublisher(h *Hub) runner.Publisher { return publisher{hub: h} }

type publisher struct{ hub *Hub }

func (p publisher) Publish(e runner.Event) {
	r := &renderer{}
	p.hub.Publish(e.SessionID, r.frame(context.Background(), []store.Event{toStoreEvent(e)}))
}

// runOptions is how a session's process is started.
func (s *Server) runOptions(ctx context.Context, sess store.Session) (runner.Options, error) {
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return runner.Options{}, err
	}
	base := filepath.Join(s.cfg.DataDir, "projects", strconv.FormatInt(p.ID, 10))
	workspace := p.Workspace
	if workspace == "" {
		workspace = filepath.Join(base, "workspace")
	}
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return runner.Options{}, fmt.Errorf("workspace: %w", err)
	}
	last, err := s.st.LastSeq(ctx, sess.ID)
	if err != nil {
		return runner.Options{}, err
	}
	o := runner.Options{
		Spec: runner.Spec{SessionID: sess.ID, ClaudeSessionID: sess.ClaudeSessionID, Resume: sess.ClaudeStarted,
			Workspace: workspace, ConfigDir: filepath.Join(base, "claude")},
		AskTimeout: s.cfg.AskTimeout, LastSeq: last,
	}
	if s.cfg.ClaudeConfigDir != "" {
		o.ConfigDir = s.cfg.ClaudeConfigDir
	}
	if s.cfg.AskUserEnabled {
		o.RelayURL = s.cfg.RelayURL
	}
	return o, nil
}
