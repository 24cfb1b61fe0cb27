package main

import (
	"flag"
	"fmt"
	"strconv"

	"parley/limit"
	"parley/server"
)

// parseLimits reads the cap on live claude processes and the per-user
// limits from the environment; unset ones keep their defaults.
func parseLimits(c *config, getenv func(string) string) error {
	c.MaxRuns = limit.DefaultMaxRuns()
	c.Limits = server.DefaultLimits
	for _, v := range []struct {
		name string
		dst  *int
		min  int
	}{
		{"PARLEY_MAX_RUNS", &c.MaxRuns, 1},
		{"PARLEY_SESSIONS_PER_MINUTE", &c.Limits.SessionsPerMinute, 0},
		{"PARLEY_PROMPTS_PER_MINUTE", &c.Limits.PromptsPerMinute, 0},
		{"PARLEY_WS_PER_USER", &c.Limits.WSPerUser, 0},
		{"PARLEY_LOGINS_PER_MINUTE", &c.Limits.LoginsPerMinute, 0},
	} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < v.min {
			return fmt.Errorf("%s: want a whole number of at least %d, got %q", v.name, v.min, s)
		}
		*v.dst = n
	}
	return nil
}

// limitFlags lets flags override the limits read by parseLimits.
func limitFlags(fs *flag.FlagSet, c *config) {
	fs.IntVar(&c.MaxRuns, "max-runs", c.MaxRuns, "live claude processes at once; more sessions wait in line (env PARLEY_MAX_RUNS; default from memory, about 220 MB each)")
	fs.IntVar(&c.Limits.SessionsPerMinute, "sessions-per-minute", c.Limits.SessionsPerMinute, "new sessions a user may start a minute (env PARLEY_SESSIONS_PER_MINUTE; 0 = no limit)")
	fs.IntVar(&c.Limits.PromptsPerMinute, "prompts-per-minute", c.Limits.PromptsPerMinute, "messages a user may send a minute (env PARLEY_PROMPTS_PER_MINUTE; 0 = no limit)")
	fs.IntVar(&c.Limits.WSPerUser, "ws-per-user", c.Limits.WSPerUser, "WebSockets (open pages) a user may hold (env PARLEY_WS_PER_USER; 0 = no limit)")
	fs.IntVar(&c.Limits.LoginsPerMinute, "logins-per-minute", c.Limits.LoginsPerMinute, "sign-in attempts per client address a minute (env PARLEY_LOGINS_PER_MINUTE; 0 = no limit)")
}
