package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"parley/safefile"
)

// Remove deletes what the CLI keeps of one conversation under configDir:
// its transcript (projects/<cwd>/<id>.jsonl, under whichever working
// directory it ran in), the directory beside it (subagents' transcripts),
// and its file history. It returns how many it removed; none is not an
// error. The config dir is the runs' to write, so nothing is followed out
// of it (os.Root) and a link is removed, never followed.
func Remove(configDir, sessionID string) (int, error) {
	if !sessionIDPattern.MatchString(sessionID) {
		return 0, fmt.Errorf("transcript: bad session id %q", sessionID)
	}
	root, err := safefile.RootUnder(configDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("remove transcript: %w", err)
	}
	defer root.Close()
	names := []string{path.Join("file-history", sessionID)}
	dirs, err := fs.ReadDir(root.FS(), "projects")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("remove transcript: %w", err)
	}
	for _, d := range dirs {
		if d.IsDir() { // a link to a directory is not one here: not followed
			names = append(names, path.Join("projects", d.Name(), sessionID+".jsonl"), path.Join("projects", d.Name(), sessionID))
		}
	}
	n, errs := 0, []error(nil)
	for _, name := range names {
		if _, err := root.Lstat(name); err != nil {
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("remove transcript: %w", err)
	}
	return n, nil
}
