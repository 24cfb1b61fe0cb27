package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"parley/gateway"
	"parley/runner"
	"parley/sandbox"
	"parley/server"
	"parley/store"
)

// isolationConfig is what confines runs: the model gateway's upstream and
// limits, and the per-project uids.
type isolationConfig struct {
	Upstream, APIKey, AuthToken string // the real model API, never given to a run
	ProjectRPM, UserRPM         int
	Isolation                   string // auto (per-project uids when root) or off
	UIDRange                    string
}

// runEnvironment builds how runs start: an allowlisted environment, the
// model gateway (whose Notifier is the supervisor, made later: notify) and,
// when Parley runs as root, the per-project uid sandbox with the programs
// installed where those uids can start them.
func runEnvironment(ctx context.Context, c config, st *store.Store, claude, self string, notify gateway.Notifier, log *slog.Logger) (runner.Config, *gateway.Gateway, error) {
	gw, err := gateway.New(gateway.Config{Upstream: c.Upstream, APIKey: c.APIKey, AuthToken: c.AuthToken,
		ProjectRPM: c.ProjectRPM, UserRPM: c.UserRPM}, server.NewUsageSink(st), notify, log)
	if err != nil {
		return runner.Config{}, nil, err
	}
	rc := runner.Config{ClaudeBin: claude, SelfExe: self, Env: runner.BaseEnv(os.Environ()), Gateway: gw}
	switch {
	case c.Isolation == "off":
		log.Warn("PARLEY_ISOLATION=off: every run has Parley's OS user and can read the data directory and other projects")
		return rc, gw, nil
	case !sandbox.Available():
		log.Warn("Parley is not running as root, so runs cannot get per-project uids: every run has Parley's OS user and can read the data directory and other projects; see the README's Isolation section")
		return rc, gw, nil
	case c.ClaudeConfigDir != "":
		return runner.Config{}, nil, errors.New("CLAUDE_CONFIG_DIR shares one config dir across projects, which per-project uids cannot: unset it, or set PARLEY_ISOLATION=off")
	}
	sb, err := sandbox.New(c.DataDir, c.UIDRange, log)
	if err != nil {
		return runner.Config{}, nil, err
	}
	if rc.ClaudeBin, err = sb.Install(claude, "claude"); err != nil {
		return runner.Config{}, nil, err
	}
	if rc.SelfExe, err = sb.Install(self, "parley"); err != nil {
		return runner.Config{}, nil, err
	}
	if err := sb.Check(ctx, rc.ClaudeBin); err != nil {
		return runner.Config{}, nil, fmt.Errorf("isolation: %w (or set PARLEY_ISOLATION=off)", err)
	}
	rc.Sandbox = sb
	log.Info("runs are confined to per-project uids", "uid_range", c.UIDRange)
	return rc, gw, nil
}
