package warm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
