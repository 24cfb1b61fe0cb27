package main

import "parley/sandbox"

// sandboxRelay is `parley sandbox-relay [--forward ADDR=SOCKET]... --
// COMMAND ARGS...`, a run's first process inside bubblewrap (see
// sandbox.RelayMain).
func sandboxRelay(args []string) error {
	code, err := sandbox.RelayMain(args)
	if err != nil {
		return err
	}
	if code != 0 {
		return exitStatus(code)
	}
	return nil
}
