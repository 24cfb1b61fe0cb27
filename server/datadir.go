package server

import "parley/launch"

// The data directory's layout and a workspace's generated files are
// package launch's (launch/paths.go, launch/workspace.go); the pages and
// the MCP backend name them here by the names they had in this package.
var (
	ConfigDir     = launch.ConfigDir
	HomeDir       = launch.HomeDir
	WorkspaceDir  = launch.WorkspaceDir
	WorktreeDir   = launch.WorktreeDir
	SyncWorkspace = launch.SyncWorkspace
	projectDir    = launch.ProjectDir
	worktreesDir  = launch.WorktreesDir
	branchFor     = launch.BranchFor
)
