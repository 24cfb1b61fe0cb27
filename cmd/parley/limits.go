package main

import (
	"flag"
	"fmt"
	"strconv"

	"parley/limit"
	"parley/server"
)

// parseLimits reads the cap on live claude processes, the runs' CPU
// priority and the per-user limits from the environment; unset ones keep
// their defaults.
func parseLimits(c *config, getenv func(string) string) error {
	c.MaxRuns = limit.DefaultMaxRuns()
	c.RunNice = 0 // off by default: runner.Config.Nice says why
	c.Limits = server.DefaultLimits
	const none = -1
	for _, v := range []struct {
		name     string
		dst      *int
		min, max int
	}{
		{"PARLEY_MAX_RUNS", &c.MaxRuns, 1, none},
		{"PARLEY_RUN_NICE", &c.RunNice, 0, 19},
		{"PARLEY_SESSIONS_PER_MINUTE", &c.Limits.SessionsPerMinute, 0, none},
		{"PARLEY_PROMPTS_PER_MINUTE", &c.Limits.PromptsPerMinute, 0, none},
		{"PARLEY_WS_PER_USER", &c.Limits.WSPerUser, 0, none},
		{"PARLEY_LOGINS_PER_MINUTE", &c.Limits.LoginsPerMinute, 0, none},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		switch {
		case v.max != none && (err != nil || n < v.min || n > v.max):
			return fmt.Errorf("%s: want a whole number from %d to %d, got %q", v.name, v.min, v.max, s)
		case err != nil || n < v.min:
			return fmt.Errorf("%s: want a whole number of at least %d, got %q", v.name, v.min, s)
		}
		*v.dst = n
	}
	return nil
}

// limitFlags lets flags override the limits read by parseLimits.
func limitFlags(fs *flag.FlagSet, c *config) {
	fs.IntVar(&c.MaxRuns, "max-runs", c.MaxRuns, "live claude processes at once; more sessions wait in line (env PARLEY_MAX_RUNS; default from memory, about 220 MB each)")
	fs.IntVar(&c.RunNice, "run-nice", c.RunNice, "CPU niceness of every run and the tools it starts, 0-19: the server's own work goes first, the CLI's stream waits (env PARLEY_RUN_NICE; 0 = as Parley's)")
	fs.IntVar(&c.Limits.SessionsPerMinute, "sessions-per-minute", c.Limits.SessionsPerMinute, "new sessions a user may start a minute (env PARLEY_SESSIONS_PER_MINUTE; 0 = no limit)")
	fs.IntVar(&c.Limits.PromptsPerMinute, "prompts-per-minute", c.Limits.PromptsPerMinute, "messages a user may send a minute (env PARLEY_PROMPTS_PER_MINUTE; 0 = no limit)")
	fs.IntVar(&c.Limits.WSPerUser, "ws-per-user", c.Limits.WSPerUser, "WebSockets (open pages) a user may hold (env PARLEY_WS_PER_USER; 0 = no limit)")
	fs.IntVar(&c.Limits.LoginsPerMinute, "logins-per-minute", c.Limits.LoginsPerMinute, "sign-in attempts per client address a minute (env PARLEY_LOGINS_PER_MINUTE; 0 = no limit)")
}
