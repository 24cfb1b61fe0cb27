package server

import (
	"context"

	"parley/runner"
	"parley/store"
)

// runOptions is what the session's process would start with
// (launch.Launcher.Options, with this server's hooks), for tests that
// check it.
func (s *Server) runOptions(ctx context.Context, sess store.Session) (runner.Options, error) {
	return s.launcher.Options(ctx, sess)
}
