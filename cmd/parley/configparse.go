package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"parley/clientip"
)

// setting is one environment variable: its flag, its default, how it is
// read into config and what it does.
type setting struct {
	Name string // the environment variable
	Flag string // the flag that overrides it ("" = none)
	// Def is the default, read by set like a value of the variable.
	Def string
	// DocDef describes a default Def cannot write down (one that depends
	// on the machine: dynamic computes it), or an empty one.
	DocDef  string
	dynamic func(getenv func(string) string) string
	Doc     string // what it does: the flag's usage and the docs' text
	More    string // more for docs/configuration.md only
	Cmd     string // who reads it, when not serve and the commands sharing its config

	set  func(c *config, name, v string) error // nil: read elsewhere (Cmd)
	bind func(fs *flag.FlagSet, c *config, name, usage string)
}

// none is "no upper bound" for whole.
const none = -1

// defaultValue is the value set reads when the variable is unset.
func (s setting) defaultValue(getenv func(string) string) string {
	if s.dynamic != nil {
		return s.dynamic(getenv)
	}
	return s.Def
}

// defaultText is the default as people read it.
func (s setting) defaultText() string {
	switch {
	case s.DocDef != "":
		return strings.ReplaceAll(s.DocDef, "`", "")
	case s.Def != "":
		return s.Def
	}
	return "none"
}

// usage is the flag's usage line, or the variable's in `serve -h`.
func (s setting) usage() string {
	return fmt.Sprintf("%s (env %s; default %s)", s.Doc, s.Name, s.defaultText())
}

// flagType is what the flag takes, as flag.PrintDefaults names it.
func (s setting) flagType() string {
	var c config
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	s.bind(fs, &c, s.Flag, "")
	name, _ := flag.UnquoteUsage(fs.Lookup(s.Flag))
	if name == "" {
		return ""
	}
	return " " + name
}

func text(p func(*config) *string) func(*config, string, string) error {
	return func(c *config, _, v string) error { *p(c) = v; return nil }
}

// onUnless is true unless the value is one of off.
func onUnless(p func(*config) *bool, off ...string) func(*config, string, string) error {
	return func(c *config, _, v string) error { *p(c) = !slices.Contains(off, v); return nil }
}

// onIf is true if the value is one of on.
func onIf(p func(*config) *bool, on ...string) func(*config, string, string) error {
	return func(c *config, _, v string) error { *p(c) = slices.Contains(on, v); return nil }
}

// whole reads a whole number from min to max (none: no bound); want says
// what is wanted in the error ("" = the bounds).
func whole(p func(*config) *int, min, max int, want string) func(*config, string, string) error {
	if want == "" && max == none {
		want = fmt.Sprintf("a whole number of at least %d", min)
	} else if want == "" {
		want = fmt.Sprintf("a whole number from %d to %d", min, max)
	}
	return func(c *config, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < min || (max != none && n > max) {
			return fmt.Errorf("%s: want %s, got %q", name, want, v)
		}
		*p(c) = n
		return nil
	}
}

// seconds reads "300" (seconds) or "5m".
func seconds(p func(*config) *time.Duration) func(*config, string, string) error {
	return func(c *config, name, v string) error {
		d, err := parseSeconds(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*p(c) = d
		return nil
	}
}

// secondsIn reads what seconds reads, from min to max.
func secondsIn(p func(*config) *time.Duration, min, max time.Duration) func(*config, string, string) error {
	return func(c *config, name, v string) error {
		d, err := parseSeconds(v)
		if err != nil || d < min || d > max {
			return fmt.Errorf("%s: want %d to %d seconds (or a duration such as 30s or 2m), got %q", name, int(min.Seconds()), int(max.Seconds()), v)
		}
		*p(c) = d
		return nil
	}
}

// runLimit reads one PARLEY_RUN_* variable with parseRunLimits
// (confine.go), which holds their rules, and keeps what pick takes.
func runLimit(pick func(dst *runLimits, got runLimits)) func(*config, string, string) error {
	return func(c *config, name, v string) error {
		got, err := parseRunLimits(func(k string) string {
			if k == name {
				return v
			}
			return ""
		})
		if err != nil {
			return err
		}
		pick(&c.RunLimits, got)
		return nil
	}
}

func metricsLoopbackSet(c *config, _, v string) error {
	lb, err := metricsLoopback(v, c.MetricsToken)
	c.MetricsLoopback = lb
	return err
}

// formatSize writes bytes as parseSize reads them: 2G, 512M, 1000.
func formatSize(n int64) string {
	for i := 4; i > 0; i-- {
		if unit := int64(1) << (10 * i); n >= unit && n%unit == 0 {
			return strconv.FormatInt(n/unit, 10) + string("KMGT"[i-1])
		}
	}
	return strconv.FormatInt(n, 10)
}

func dbURLBind(fs *flag.FlagSet, c *config, name, usage string) {
	fs.Var(dbURLFlag{&c.DatabaseURL, &c.dbURLPassword}, name, usage)
}

func textFlag(p func(*config) *string) func(*flag.FlagSet, *config, string, string) {
	return func(fs *flag.FlagSet, c *config, name, usage string) { fs.StringVar(p(c), name, *p(c), usage) }
}

func boolFlag(p func(*config) *bool) func(*flag.FlagSet, *config, string, string) {
	return func(fs *flag.FlagSet, c *config, name, usage string) { fs.BoolVar(p(c), name, *p(c), usage) }
}

func intFlag(p func(*config) *int) func(*flag.FlagSet, *config, string, string) {
	return func(fs *flag.FlagSet, c *config, name, usage string) { fs.IntVar(p(c), name, *p(c), usage) }
}

func durationFlag(p func(*config) *time.Duration) func(*flag.FlagSet, *config, string, string) {
	return func(fs *flag.FlagSet, c *config, name, usage string) { fs.DurationVar(p(c), name, *p(c), usage) }
}

func trustedProxiesSet(c *config, name, v string) error {
	r, err := clientip.Parse(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.TrustedProxies = r
	return nil
}
