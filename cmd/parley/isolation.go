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
	Isolation                   string // auto, uid, bwrap or off
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
	mode := c.Isolation
	if mode == "auto" {
		mode = "uid"
		if !sandbox.Available() {
			mode = "bwrap"
		}
	}
	switch mode {
	case "off":
		log.Warn("PARLEY_ISOLATION=off: every run has Parley's OS user and can read the data directory and other projects")
		return rc, gw, nil
	case "bwrap":
		home, _ := os.UserHomeDir()
		bw, err := sandbox.NewBubblewrap(ctx, []string{c.DataDir, home}, []string{self})
		if err != nil && c.Isolation == "auto" {
			log.Warn("Parley is not running as root and bubblewrap does not work here, so runs are not confined: every run has Parley's OS user and can read the data directory and other projects; see the README's Isolation section", "err", err)
			return rc, gw, nil
		}
		if err != nil {
			return runner.Config{}, nil, err
		}
		rc.Sandbox = bw
		log.Info("runs are confined with bubblewrap")
		return rc, gw, nil
	}
	if !sandbox.Available() {
		return runner.Config{}, nil, errors.New("PARLEY_ISOLATION=uid needs Parley to run as root")
	}
	if c.ClaudeConfigDir != "" {
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

// toolSandbox is the runs' sandbox, for the tools Parley runs on a
// project's files (git): nil when runs are not confined.
func toolSandbox(s runner.Sandbox) server.ToolSandbox {
	t, _ := s.(server.ToolSandbox)
	return t
}

// isUIDSandbox reports whether runs start as per-project uids (not as root).
func isUIDSandbox(s runner.Sandbox) bool {
	_, ok := s.(*sandbox.Sandbox)
	return ok
}
