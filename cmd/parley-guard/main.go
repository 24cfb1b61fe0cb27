// Command parley-guard is `parley run-guard` on its own: the supervisor
// that starts each run's claude confined so that nothing of the run
// outlives Parley (package guard). It is built from package guard and the
// standard library alone, so the process each live session keeps costs
// about 1 MB of private memory instead of the 8 MB of the whole parley
// binary, and starts without parley's package init (docs/instant.md).
//
// Parley finds it next to its own executable (runner.GuardBeside) and
// starts it exactly as it starts `parley run-guard`:
//
//	parley-guard run-guard [--nice N] [--cgroup DIR]... [--pid-ns] [--uid U --gid G] [--oom-score N] [--max-file BYTES] -- CMD...
//
// The leading "run-guard" may be left out.
package main

import (
	"os"

	"parley/guard"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "run-guard" {
		args = args[1:]
	}
	code, err := guard.Main(args)
	if err != nil {
		os.Stderr.WriteString("parley-guard: " + err.Error() + "\n")
	}
	os.Exit(code)
}
