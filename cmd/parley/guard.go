package main

import (
	"fmt"

	"parley/guard"
)

// exitStatus is an error that makes main exit with that code (run-guard
// passes on the exit status of the command it guards).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// runGuard is `parley run-guard [--nice N] [--] COMMAND ARGS...` (see
// package guard).
func runGuard(args []string) error {
	code, err := guard.Main(args)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}
