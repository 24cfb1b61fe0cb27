package attach

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"parley/sandbox/fdtree"
)

// UploadsDir is where, under the directory Claude works in, Parley saves
// attached files: one folder per message, named by the time it was sent
// and the id of its first attachment (Folder).
const UploadsDir = ".parley/uploads"

// maxRenames bounds the new names tried for a file whose name is taken.
const maxRenames = 100

// ErrUnsafe says a directory on the way to the upload folder is a link or
// not a directory: a run planted it, and nothing was written.
var ErrUnsafe = errors.New("the upload folder is a link or not a directory")

// Folder names a message's upload folder: "20261127-093000-<id>".
func Folder(at time.Time, firstID string) string {
	id := firstID
	if len(id) > 8 {
		id = id[:8]
	}
	return at.UTC().Format("20060102-150405") + "-" + id
}

// Saver writes a message's files under base (the session's worktree or the
// project's workspace), into UploadsDir/folder. Every directory below base
// is opened from its parent's descriptor without following a link, and
// every file is created with O_EXCL|O_NOFOLLOW: a link a run planted
// anywhere on the way is refused, never followed, and no existing file is
// overwritten. What Parley makes gets base's owner (the project's uid),
// through the descriptor, when Parley runs as root.
type Saver struct {
	dir      *fdtree.Dir
	uid, gid int
	rel      string // UploadsDir/folder, slash-separated
	chown    bool
}

// NewSaver opens (making it when missing) base/UploadsDir/folder.
func NewSaver(base, folder string) (*Saver, error) {
	top, err := fdtree.Open(base)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", base, err)
	}
	uid, gid := top.Owner()
	s := &Saver{dir: top, uid: uid, gid: gid, rel: path.Join(UploadsDir, folder), chown: os.Geteuid() == 0}
	for _, name := range strings.Split(s.rel, "/") {
		if err := s.enter(name); err != nil {
			s.dir.Close()
			return nil, err
		}
	}
	return s, nil
}

// enter makes (if missing) and opens the entry name of the current
// directory, without following a link, and gives it base's owner.
func (s *Saver) enter(name string) error {
	if err := s.dir.Mkdir(name, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", name, err)
	}
	sub, err := s.dir.Open(name)
	if errors.Is(err, fdtree.ErrNotDir) {
		return fmt.Errorf("%s: %w", name, ErrUnsafe)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	s.dir.Close()
	s.dir = sub
	if uid, gid := sub.Owner(); s.chown && (uid != s.uid || gid != s.gid) {
		return sub.Chown(s.uid, s.gid)
	}
	return nil
}

// Save writes data as name in the folder, or as "name-2.ext" and so on
// when the name is taken, and returns its path relative to base.
func (s *Saver) Save(name string, data []byte) (string, error) {
	for i := 1; i <= maxRenames; i++ {
		n := numbered(name, i)
		f, err := s.dir.Create(n, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("save %s: %w", n, err)
		}
		_, err = f.Write(data)
		if s.chown {
			err = errors.Join(err, f.Chown(s.uid, s.gid))
		}
		if err = errors.Join(err, f.Close()); err != nil {
			return "", fmt.Errorf("save %s: %w", n, err)
		}
		return path.Join(s.rel, n), nil
	}
	return "", fmt.Errorf("save %s: %d names taken", name, maxRenames)
}

// Close closes the folder.
func (s *Saver) Close() error { return s.dir.Close() }

// numbered is name for i = 1, else name with "-i" before its extension.
func numbered(name string, i int) string {
	if i == 1 {
		return name
	}
	ext := filepath.Ext(name)
	if ext == name {
		ext = ""
	}
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, ext), i, ext)
}
