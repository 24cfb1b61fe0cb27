package main

import (
	"flag"
	"fmt"
	"strconv"

	"parley/gateway"
)

// parseGatewayLimits sets the model gateway's defaults, a finite request
// rate per project and a cap on max_tokens, and reads PARLEY_MAX_TOKENS.
// PARLEY_PROJECT_RPM, read after it, may set another rate (0 = none).
func parseGatewayLimits(c *config, getenv func(string) string) error {
	c.ProjectRPM = gateway.DefaultProjectRPM
	c.MaxTokens = gateway.DefaultMaxTokens
	if s := getenv("PARLEY_MAX_TOKENS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("PARLEY_MAX_TOKENS: want a whole number of tokens of at least 1, got %q", s)
		}
		c.MaxTokens = n
	}
	return nil
}

// gatewayFlags lets flags override what parseGatewayLimits read.
func gatewayFlags(fs *flag.FlagSet, c *config) {
	fs.IntVar(&c.MaxTokens, "max-tokens", c.MaxTokens, "a model request's max_tokens above this is lowered to it at the gateway (env PARLEY_MAX_TOKENS)")
}
