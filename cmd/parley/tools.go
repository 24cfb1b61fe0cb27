package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"parley/askuser"
	"parley/runner/fakeapi"
)

// claudeVersion is the CLI version Parley is built and tested against.
const claudeVersion = "2.1.328"

// findClaude returns the claude binary to run: the configured path, claude
// on PATH, or the pinned version installed with npm under the data dir.
func findClaude(ctx context.Context, c config, log *slog.Logger) (string, error) {
	if c.ClaudeBin != "" {
		return c.ClaudeBin, nil
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	prefix := filepath.Join(c.DataDir, "claude-cli")
	bin := filepath.Join(prefix, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("claude is not on PATH and npm is not installed to fetch it: install @anthropic-ai/claude-code@" +
			claudeVersion + " or set PARLEY_CLAUDE_BIN")
	}
	log.Info("installing the Claude CLI", "version", claudeVersion, "prefix", prefix)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-fund", "--no-audit", "--prefix", prefix,
		"@anthropic-ai/claude-code@"+claudeVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install claude: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// mcpAskUser is the stdio MCP server the claude CLI spawns for each run.
func mcpAskUser(ctx context.Context, getenv func(string) string, stdin io.ReadCloser, stdout io.Writer) error {
	path := getenv("ASK_USER_CONFIG")
	if path == "" {
		return errors.New("ASK_USER_CONFIG is not set: this command is started by Parley for Claude, not by hand")
	}
	c, err := askuser.LoadConfig(path)
	if err != nil {
		return err
	}
	return askuser.Serve(ctx, c, stdin, nopWriteCloser{stdout})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// fakeModel serves the demo scenario: a scripted stand-in for the Anthropic
// API that asks one ask_user question, so the ask flow can be tried without
// a key. It is a demo, not a model.
func fakeModel(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("parley fake-model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8787", "address to serve the fake Messages API on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := newLogger(stderr, "info")
	log.Info("DEMO: scripted fake model; point Parley at it with ANTHROPIC_BASE_URL=http://" + *addr + " ANTHROPIC_API_KEY=demo")
	return fakeapi.ListenAndServe(ctx, *addr, fakeapi.Demo(), log)
}
