package server

import "parley/launch"

// The data directory's layout is package launch's (launch/paths.go); the
// tests name its directories by the names they had in this package.
var (
	ConfigDir     = launch.ConfigDir
	WorkspaceDir  = launch.WorkspaceDir
	WorktreeDir   = launch.WorktreeDir
	SyncWorkspace = launch.SyncWorkspace
	projectDir    = launch.ProjectDir
	worktreesDir  = launch.WorktreesDir
)
