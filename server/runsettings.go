package server

import "parley/store"

// configDirOf is the CLAUDE_CONFIG_DIR of the project's runs.
func (s *Server) configDirOf(p store.Project) string { return s.launcher.ConfigDirOf(p) }
