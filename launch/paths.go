package launch

import (
	"path/filepath"
	"strconv"

	"parley/store"
)

// Each project lives under <data dir>/projects/<id>/: workspace/ is the
// managed directory Claude works in (unless an admin points the project at
// an existing directory) and claude/ its CLAUDE_CONFIG_DIR, so transcripts
// and plans of different projects never mix. Directories are named by the
// project's id, never by anything a user typed.

// ProjectDir is the project's directory under dataDir.
func ProjectDir(dataDir string, id int64) string {
	return filepath.Join(dataDir, "projects", strconv.FormatInt(id, 10))
}

// ConfigDir is the project's CLAUDE_CONFIG_DIR.
func ConfigDir(dataDir string, id int64) string {
	return filepath.Join(ProjectDir(dataDir, id), "claude")
}

// HomeDir is the HOME of the project's runs.
func HomeDir(dataDir string, id int64) string {
	return filepath.Join(ProjectDir(dataDir, id), "home")
}

// WorkspaceDir is where Claude works for the project: its existing
// directory if it has one, else the managed one.
func WorkspaceDir(dataDir string, p store.Project) string {
	if p.Workspace != "" {
		return p.Workspace
	}
	return filepath.Join(ProjectDir(dataDir, p.ID), "workspace")
}

// WorktreeDir is where a session's worktree lives: outside the repository.
func WorktreeDir(dataDir string, projectID int64, sessionID string) string {
	return filepath.Join(WorktreesDir(dataDir, projectID), sessionID)
}

// WorktreesDir holds a project's session worktrees.
func WorktreesDir(dataDir string, projectID int64) string {
	return filepath.Join(ProjectDir(dataDir, projectID), "worktrees")
}
