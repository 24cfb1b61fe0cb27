package warm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"parley/cgroup"
	"parley/runner"
)

// process is everything of a run's options that reaches its process: its
// argv, its environment, the files made for it (ask config, instructions),
// its sandbox (directories, uid by project) and its limits. A process
// started ahead is used only when this is what a start would get now.
type process struct {
	ProjectID     int64
	Workspace     string
	ConfigDir     string
	Home          string
	WritableDirs  []string
	ExtraArgs     []string
	Instructions  string
	Limits        cgroup.Limits
	MaxFile       int64
	ModelURL      string
	RelayURL      string
	AskOverHTTP   bool
	AskTimeout    time.Duration
	AskMaxTimeout time.Duration
}

// fingerprint sums what of o reaches its process, with the session's
// own ids left out (they are the process's, made ahead) so that the
// options of two sessions compare.
func fingerprint(o runner.Options) string {
	b, err := json.Marshal(process{ProjectID: o.ProjectID, Workspace: o.Workspace, ConfigDir: o.ConfigDir, Home: o.Home,
		WritableDirs: o.WritableDirs, ExtraArgs: o.ExtraArgs, Instructions: o.Instructions, Limits: o.Limits, MaxFile: o.MaxFile,
		ModelURL: o.ModelURL, RelayURL: o.RelayURL, AskOverHTTP: o.AskOverHTTP, AskTimeout: o.AskTimeout, AskMaxTimeout: o.AskMaxTimeout})
	if err != nil {
		return "unknown: " + err.Error() // never equal to a sum
	}
	s := string(b)
	for _, id := range []string{o.SessionID, o.ClaudeSessionID} {
		if id != "" {
			s = strings.ReplaceAll(s, id, "<session>")
		}
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// budgetFlag is the CLI flag of a run's spending limit (launch): its
// value moves with what the project spends.
const budgetFlag = "--max-budget-usd"

// withoutBudget is o with the value of its spending limit masked: two
// options whose fingerprints differ and whose withoutBudget ones do not
// differ only in what the project has spent.
func withoutBudget(o runner.Options) runner.Options {
	args := slices.Clone(o.ExtraArgs)
	for i := 0; i+1 < len(args); i++ {
		if args[i] == budgetFlag {
			args[i+1] = "<budget>"
		}
	}
	o.ExtraArgs = args
	return o
}
