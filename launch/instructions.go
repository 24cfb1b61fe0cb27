package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"parley/safefile"
)

// maxClaudeMD bounds the CLAUDE.md Parley reads from a workspace.
const maxClaudeMD = 256 << 10

// workspaceInstructions reads the workspace's CLAUDE.md for the run's system
// prompt: the CLI is started with no setting sources, so it loads no
// CLAUDE.md itself. The file is read without following a symlink, only if it
// is a regular file of at most maxClaudeMD bytes; anything else is refused
// with a notice for the session's page.
func workspaceInstructions(dir string) (text, notice string) {
	b, err := safefile.Read(filepath.Join(dir, "CLAUDE.md"), maxClaudeMD)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", ""
	case errors.Is(err, safefile.ErrSymlink):
		return "", "The workspace's CLAUDE.md is a symbolic link. Parley does not follow links in a workspace, so Claude runs without those instructions; replace the link with a regular file."
	case errors.Is(err, safefile.ErrNotRegular):
		return "", "The workspace's CLAUDE.md is not a regular file, so Parley did not read it and Claude runs without those instructions."
	case errors.Is(err, safefile.ErrTooLarge):
		return "", fmt.Sprintf("The workspace's CLAUDE.md is larger than %d KiB, so Parley did not read it and Claude runs without those instructions.", maxClaudeMD>>10)
	case err != nil:
		return "", "Parley could not read the workspace's CLAUDE.md, so Claude runs without those instructions."
	}
	b = bytes.TrimPrefix(b, []byte(ClaudeMDMarker))
	if len(bytes.TrimSpace(b)) == 0 {
		return "", ""
	}
	return "Contents of CLAUDE.md (the project's instructions):\n\n" + strings.TrimSpace(string(b)), ""
}

// joinPrompt joins the parts of an appended system prompt that are set.
func joinPrompt(parts ...string) string {
	var set []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			set = append(set, p)
		}
	}
	return strings.Join(set, "\n\n")
}
