package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"parley/sandbox/fdtree"
)

// Everything Parley does as root to a project's files goes through
// fdtree: directories opened from their parent's descriptor without
// following a link and checked by fstat, owners and modes changed on
// descriptors. Runs (and git) write these trees as the project's uid at
// any moment, so a path resolved twice may lead somewhere else the second
// time (TestSwapAttack).

// openDir opens dir without following a link where a run could have put
// one: inside the data dir's projects/, every component from the
// project's own directory down; elsewhere (a workspace an admin chose),
// its last component. What is above is root's or the admin's (projects/
// and the data dir are root's, 0711: a link there is the operator's).
// With perm not 0, missing directories are made with mode perm.
func (s *Sandbox) openDir(dir string, perm os.FileMode) (*fdtree.Dir, error) {
	if rel, ok := under(s.projectsDir(), dir); ok {
		return fdtree.OpenBeneath(s.projectsDir(), rel, perm)
	}
	dir = filepath.Clean(dir)
	if perm != 0 {
		if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
			return nil, err
		}
	}
	return fdtree.OpenBeneath(filepath.Dir(dir), filepath.Base(dir), perm)
}

// projectsDir holds the projects' own directories.
func (s *Sandbox) projectsDir() string { return filepath.Join(s.dataDir, "projects") }

// under is path relative to dir, if path is inside it.
func under(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

// own gives dir and everything under it to uid (fdtree.ChownTree: no
// link followed) and makes dir itself 0700. Unless always, a dir already
// owned by uid is taken as done: runs and git create what they create as
// uid. With perm not 0, a missing dir is made.
func (s *Sandbox) own(dir string, uid int, always bool, perm os.FileMode) error {
	d, err := s.openDir(dir, perm)
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer d.Close()
	if u, g := d.Owner(); always || u != uid || g != uid {
		if err := d.ChownTree(uid, uid); err != nil {
			return fmt.Errorf("sandbox: give %s to uid %d: %w", dir, uid, err)
		}
	}
	if d.Perm() != 0o700 {
		if err := d.Chmod(0o700); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	return nil
}

// holdProjectDir keeps the project's own directory in the data dir (the
// parent of its config dir, if there) Parley's, mode 0711: its runs may
// enter it but not replace what is in it (their workspace, config dir,
// home and worktrees, each the uid's) with a link to another project's,
// which Parley would then follow.
func (s *Sandbox) holdProjectDir(configDir string) error {
	p := filepath.Dir(configDir)
	if configDir == "" || filepath.Dir(p) != s.projectsDir() {
		return nil
	}
	projects, err := fdtree.OpenBeneath(s.projectsDir(), "", 0)
	if err != nil {
		return fmt.Errorf("project dir: %w", err)
	}
	defer projects.Close()
	if err := projects.Mkdir(filepath.Base(p), 0o711); err != nil {
		return fmt.Errorf("project dir: %w", err)
	}
	d, err := projects.Open(filepath.Base(p))
	if err != nil {
		return fmt.Errorf("project dir: %w", err)
	}
	defer d.Close()
	if u, g := d.Owner(); u != os.Geteuid() || g != os.Getegid() {
		if err := d.Chown(os.Geteuid(), os.Getegid()); err != nil {
			return fmt.Errorf("project dir: %w", err)
		}
	}
	if d.Perm() != 0o711 {
		if err := d.Chmod(0o711); err != nil {
			return fmt.Errorf("project dir: %w", err)
		}
	}
	return nil
}

// giveRunFile gives the run's file at path (a token file, 0600, that
// Parley wrote for it) to uid, and makes every directory between the
// data dir and it enterable (0711), each through its descriptor. Those
// directories (serve keeps the files in run/<replica>/) are root's, and
// no run can write them: a link among them is the operator's, and is
// followed. The file itself is not: it must be a regular file with one
// link.
func (s *Sandbox) giveRunFile(path string, uid int) error {
	dir, name := filepath.Split(filepath.Clean(path))
	if rel, ok := under(s.dataDir, dir); ok {
		p := s.dataDir
		for _, c := range strings.Split(rel, string(filepath.Separator)) {
			p = filepath.Join(p, c)
			if err := enterable(p); err != nil {
				return err
			}
		}
	}
	d, err := fdtree.OpenBeneath(dir, "", 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.ChownFile(name, uid, uid)
}

// enterable makes the directory at dir mode 0711 (fchmod).
func enterable(dir string) error {
	d, err := fdtree.OpenBeneath(dir, "", 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if d.Perm() == 0o711 {
		return nil
	}
	return d.Chmod(0o711)
}
