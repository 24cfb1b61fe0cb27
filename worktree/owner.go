package worktree

import (
	"fmt"
	"os"
	"syscall"

	"parley/sandbox/fdtree"
)

// MatchOwner gives dir and everything in it the owner and group of like:
// a session's worktree belongs to whoever owns the project's workspace
// (runs may execute as a per-project user). A dir whose top has that
// owner already is left as it is: git made it as that owner (it runs as
// the project's uid), and one `git worktree add` makes every file of it
// as one user. Otherwise the walk goes through descriptors and follows
// no link (fdtree.ChownTree): the project's runs may write in dir while
// this runs as root. dir's parent may be theirs too (its last component
// is not followed), not the directories above it.
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
	d, err := fdtree.Open(dir)
	if err != nil {
		return fmt.Errorf("owner of %s: %w", dir, err)
	}
	defer d.Close()
	if u, g := d.Owner(); u == uid && g == gid {
		return nil
	}
	if err := d.ChownTree(uid, gid); err != nil {
		return fmt.Errorf("give %s to %d:%d: %w", dir, uid, gid, err)
	}
	return nil
}
