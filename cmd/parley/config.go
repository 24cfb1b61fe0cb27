package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"parley/clientip"
	"parley/metrics"
	"parley/server"
	"parley/warm"
)

// config is Parley's configuration: environment variables, which flags may
// override. Each variable is a row of settings (configvars.go).
type config struct {
	DatabaseURL     string
	Addr            string
	RelayAddr       string
	ClaudeBin       string
	DataDir         string
	ClaudeConfigDir string
	AskTimeout      time.Duration
	IdleTimeout     time.Duration
	StallTimeout    time.Duration
	AskUser         bool
	SecureCookies   bool
	LogLevel        string
	LogFormat       string           // text or json (PARLEY_LOG_FORMAT)
	LeaseTTL        time.Duration    // replicas: how long a lapsed replica keeps its sessions
	DrainTimeout    time.Duration    // graceful shutdown: how long turns in flight may take
	MetricsToken    string           // bearer token for /metrics from other hosts or through a proxy; "" = loopback only
	MetricsLoopback metrics.Loopback // PARLEY_METRICS_LOOPBACK: which loopback clients need no token
	MaxRuns         int              // live claude processes at once (PARLEY_MAX_RUNS)
	Warm            warm.Config      // processes started ahead (PARLEY_WARM_*)
	RunNice         int              // CPU niceness of every run's process group (PARLEY_RUN_NICE)
	CPURuns         int              // sessions working (streaming, running tools) at once; more wait in line (PARLEY_CPU_RUNS)
	MaxTokens       int              // cap on a model request's max_tokens at the gateway (PARLEY_MAX_TOKENS)
	ServerTools     bool             // PARLEY_MODEL_SERVER_TOOLS: forward mcp_servers and web_fetch
	Limits          server.Limits    // per-user limits
	RunLimits       runLimits        // per-run cgroup limits and largest file (confine.go)
	Reach           reachConfig      // PARLEY_PUBLIC_URL, PARLEY_PUSH_HOSTS, PARLEY_SMTP_URL… (reach.go)
	OIDC            oidcConfig       // PARLEY_OIDC_*, PARLEY_PASSWORD_LOGIN (oidc.go)
	isolationConfig
	dbURLPassword bool // --database-url carried a password (dburl.go)

	TrustedProxies clientip.Resolver // PARLEY_TRUSTED_PROXIES: whose forwarding headers name the client
}

// parseConfig reads the environment, then the flags: every row of settings
// in order, an unset variable as its default.
func parseConfig(name string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	for _, s := range settings {
		if s.set == nil {
			continue // read by another command
		}
		v := getenv(s.Name)
		if v == "" {
			v = s.defaultValue(getenv)
		}
		if err := s.set(&c, s.Name, v); err != nil {
			return c, err
		}
	}
	fs := flag.NewFlagSet("parley "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, s := range settings {
		if s.Flag != "" && s.bind != nil {
			s.bind(fs, &c, s.Flag, s.usage())
		}
	}
	fs.Usage = func() { writeServeUsage(fs.Output(), name) }
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.check()
}

// check refuses what no single variable's parser can see: values a flag
// set, and values that depend on others.
func (c config) check() error {
	if c.MaxRuns < 1 {
		return errors.New("the cap on live claude processes (max-runs) must be at least 1")
	}
	if c.RunNice < 0 || c.RunNice > 19 {
		return fmt.Errorf("run-nice %d: want 0-19", c.RunNice)
	}
	if !slices.Contains([]string{"auto", "uid", "bwrap", "off"}, c.Isolation) {
		return fmt.Errorf("PARLEY_ISOLATION %q: want auto, uid, bwrap or off", c.Isolation)
	}
	if c.AskTimeout < time.Second {
		return errors.New("the ask timeout must be at least one second")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("PARLEY_LOG_FORMAT %q: want text or json", c.LogFormat)
	}
	if d := c.Warm.SpendRefill; d < time.Second || d > time.Hour {
		return fmt.Errorf("-warm-spend-refill %s: want 1s to 1h", d) // the variable's own parser bounds it too
	}
	return nil
}

// logger is the server's logger: c.LogLevel and above, as text or as one
// JSON object a line (PARLEY_LOG_FORMAT=json, for a log collector).
func (c config) logger(w io.Writer) *slog.Logger {
	if c.LogFormat != "json" {
		return newLogger(w, c.LogLevel)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: logLevel(c.LogLevel)}))
}

// newLogger is a text logger at level (info if level is not one).
func newLogger(w io.Writer, level string) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: logLevel(level)}))
}

func logLevel(level string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return l
}

// writeServeUsage is `parley serve -h`: every flag and every variable
// without one, from settings.
func writeServeUsage(w io.Writer, name string) {
	fmt.Fprintf(w, "Usage: parley %s [flags]\n\nFlags (each overrides its environment variable):\n", name)
	var envOnly []string
	for _, s := range settings {
		switch {
		case s.set == nil:
		case s.Flag == "" || s.bind == nil:
			envOnly = append(envOnly, fmt.Sprintf("  %s\n    \t%s\n", s.Name, s.usage()))
		default:
			fmt.Fprintf(w, "  -%s%s\n    \t%s\n", s.Flag, s.flagType(), s.usage())
		}
	}
	fmt.Fprintf(w, "\nEnvironment variables without a flag:\n%s", strings.Join(envOnly, ""))
	fmt.Fprintln(w, "\ndocs/configuration.md has the same table.")
}
