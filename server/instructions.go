package server

import "os"

// runEUID is the effective uid runs have: Parley's own, or, when runs are
// confined to per-project uids, some unprivileged one.
func (s *Server) runEUID() int {
	if s.cfg.RunsConfined {
		return 65534
	}
	return os.Geteuid()
}
