package worktree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MatchOwner gives dir and everything in it the owner and group of like:
// a session's worktree belongs to whoever owns the project's workspace
// (runs may execute as a per-project user).
func MatchOwner(dir, like string) error {
	fi, err := os.Stat(like)
	if err != nil {
		return fmt.Errorf("owner of %s: %w", like, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid, gid := int(st.Uid), int(st.Gid)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if s, ok := info.Sys().(*syscall.Stat_t); ok && int(s.Uid) == uid && int(s.Gid) == gid {
			return nil
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return fmt.Errorf("chown %s: %w", path, err)
		}
		return nil
	})
}
