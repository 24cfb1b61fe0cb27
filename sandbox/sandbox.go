// Package sandbox confines each claude run to its project's files. When
// Parley runs as root, every project gets its own OS user id, taken from a
// configured range (first+project id): its directories belong to that uid
// with mode 0700, its runs start as that uid (and gid) with no supplementary
// groups, and so they can read neither other projects, nor the data
// directory's other parts, nor the database's files, nor another project's
// relay and gateway tokens.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"parley/runner"
	"parley/sandbox/fdtree"
)

// DefaultRange is the uid range projects' runs get by default.
const DefaultRange = "200000-299999"

// Sandbox gives each project a uid and confines its runs to it.
type Sandbox struct {
	dataDir     string
	first, last int // the uid range; first itself is kept for the start-up check
	binDir      string
	log         *slog.Logger
	walked      sync.Map // writable dirs walked whole once (ownWalkedOnce)
}

// Available reports whether uid isolation can work here: it needs root.
func Available() bool { return os.Geteuid() == 0 }

// ParseRange reads "FIRST-LAST".
func ParseRange(s string) (first, last int, err error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || first < 1000 || last <= first || last > 1<<31-2 {
		return 0, 0, fmt.Errorf("uid range %q: want FIRST-LAST, with 1000 <= FIRST < LAST", s)
	}
	return first, last, nil
}

// New prepares dataDir for confined runs: the data directory and its
// projects/ directory become enterable but not listable by others (0711),
// and bin/ holds the programs runs start. Every ancestor of dataDir must
// be enterable by other users.
func New(dataDir, uidRange string, log *slog.Logger) (*Sandbox, error) {
	if !Available() {
		return nil, errors.New("per-project uids need Parley to run as root")
	}
	first, last, err := ParseRange(uidRange)
	if err != nil {
		return nil, err
	}
	dataDir, err = filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	s := &Sandbox{dataDir: dataDir, first: first, last: last, binDir: filepath.Join(dataDir, "bin"), log: log}
	for _, d := range []string{dataDir, filepath.Join(dataDir, "projects")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := os.MkdirAll(s.binDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.Chmod(s.binDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := checkEnterable(dataDir); err != nil {
		return nil, err
	}
	return s, nil
}

// UID is the uid of the project's runs.
func (s *Sandbox) UID(projectID int64) (int, error) {
	if projectID < 1 || projectID > int64(s.last-s.first) {
		return 0, fmt.Errorf("project %d has no uid in the range %d-%d; widen PARLEY_UID_RANGE", projectID, s.first, s.last)
	}
	return s.first + int(projectID), nil
}

// Confine implements runner.Sandbox: it gives the run's directories and
// its ask_user config file to the project's uid and starts cmd as that uid.
func (s *Sandbox) Confine(cmd *exec.Cmd, spec runner.Spec) error {
	uid, err := s.UID(spec.ProjectID)
	if err != nil {
		return err
	}
	// The project's own directory (holding its config dir, home, workspace
	// and worktrees) stays Parley's (holdProjectDir); every directory the
	// run may write belongs to the uid, mode 0700.
	if err := s.holdProjectDir(spec.ConfigDir); err != nil {
		return err
	}
	private := []string{spec.ConfigDir, spec.Home}
	if ws := spec.Workspace; ws != "" && !strings.HasPrefix(ws, s.dataDir+string(filepath.Separator)) {
		// A directory an admin chose: the uid must be able to reach it.
		if err := checkEnterable(ws); err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
	}
	for _, d := range append(private, spec.Workspace) {
		if d == "" {
			continue
		}
		if err := s.own(d, uid, false, 0); err != nil {
			return err
		}
	}
	// The run's TMPDIR, which the runner makes as root when it is missing,
	// is the run's too, though home is the uid's already. A link there
	// is the run's own doing, and not followed.
	if spec.Home != "" {
		err := s.own(filepath.Join(spec.Home, "tmp"), uid, false, 0o700)
		if err != nil && !errors.Is(err, fdtree.ErrNotDir) {
			return err
		}
	}
	// Writable dirs (a worktree project's repository) are walked whole
	// once per process: git runs as the uid (ConfineTool) and Parley's
	// own writes there give what they make to the owner, but an older
	// release ran git as root and may have left root's files.
	for _, d := range spec.WritableDirs {
		if err := s.ownWalkedOnce(d, uid, 0o700); err != nil {
			return err
		}
	}
	// The run's token files (ask_user's relay config, or the --mcp-config
	// of ask_user over HTTP) are 0600: given to the run's uid, readable by
	// no other project's run.
	for _, path := range []string{spec.AskConfigPath, spec.MCPConfigPath, spec.InstructionsPath} {
		if path == "" {
			continue
		}
		if err := s.giveRunFile(path, uid); err != nil {
			return fmt.Errorf("ask_user config: %w", err)
		}
	}
	setCredential(cmd, uid)
	return nil
}

// ConfineTool starts cmd, a tool Parley runs on the project's files for
// itself (git on its repository), as the project's uid, as its runs are:
// the project's own directory (the parent of spec.ConfigDir), spec.Workspace
// and spec.WritableDirs (made if missing) belong to the uid before it
// starts. It walks each of those trees whole once per process only: it
// runs on page loads.
func (s *Sandbox) ConfineTool(cmd *exec.Cmd, spec runner.Spec) error {
	uid, err := s.UID(spec.ProjectID)
	if err != nil {
		return err
	}
	if ws := spec.Workspace; ws != "" && !strings.HasPrefix(ws, s.dataDir+string(filepath.Separator)) {
		if err := checkEnterable(ws); err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
	}
	if err := s.holdProjectDir(spec.ConfigDir); err != nil {
		return err
	}
	// Walked whole once per process: an older release ran tools as root
	// and may have left its files there. A missing workspace stays
	// missing: the tool fails.
	if ws := spec.Workspace; ws != "" {
		if err := s.ownWalkedOnce(ws, uid, 0); err != nil {
			return err
		}
	}
	for _, d := range spec.WritableDirs {
		if err := s.ownWalkedOnce(d, uid, 0o700); err != nil {
			return err
		}
	}
	setCredential(cmd, uid)
	return nil
}

// ownWalkedOnce gives dir to uid (own), walking it whole the first time
// in this process. With perm not 0, a missing dir is made.
func (s *Sandbox) ownWalkedOnce(dir string, uid int, perm os.FileMode) error {
	_, walked := s.walked.LoadOrStore(dir, true)
	if err := s.own(dir, uid, !walked, perm); err != nil {
		s.walked.Delete(dir)
		return err
	}
	return nil
}

func setCredential(cmd *exec.Cmd, uid int) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Groups empty: setgroups([]) drops root's supplementary groups.
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
}

// Install makes the program at path startable by every project's uid. A
// program others can already reach and run (say /usr/local/bin/claude) is
// used where it is; any other gets a hard link (or, across file systems, a
// copy) in the data directory's bin/, mode 0755. It returns the path to use.
func (s *Sandbox) Install(path, name string) (string, error) {
	src, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	sfi, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	if sfi.Mode().Perm()&0o005 == 0o005 && checkEnterable(src) == nil {
		return src, nil
	}
	dst := filepath.Join(s.binDir, name)
	if dfi, err := os.Stat(dst); err == nil && (os.SameFile(sfi, dfi) || sameCopy(sfi, dfi)) {
		return dst, os.Chmod(dst, 0o755)
	}
	tmp := dst + ".new"
	os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			return "", fmt.Errorf("install %s: %w", name, err)
		}
		// The copy keeps the original's time, so the next start knows it.
		if err := os.Chtimes(tmp, sfi.ModTime(), sfi.ModTime()); err != nil {
			return "", fmt.Errorf("install %s: %w", name, err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	return dst, os.Chmod(dst, 0o755)
}

// sameCopy reports whether dst looks like a copy Install made of src.
func sameCopy(src, dst os.FileInfo) bool {
	return src.Size() == dst.Size() && src.ModTime().Equal(dst.ModTime())
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// Check starts `claude --version` as an unprivileged uid of the range, so a
// CLI the runs cannot start is reported at start-up, not at the first run.
func (s *Sandbox) Check(ctx context.Context, claudeBin string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	home, err := os.MkdirTemp("", "parley-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	if err := os.Chown(home, s.first, s.first); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, claudeBin, "--version")
	cmd.Env = []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + home, "DISABLE_AUTOUPDATER=1", "PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.Dir = home
	setCredential(cmd, s.first)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("the claude CLI %s does not start as an unprivileged uid (%d): %w: %.300s", claudeBin, s.first, err, out)
	}
	return nil
}

// checkEnterable reports an ancestor of dir that other users cannot enter.
func checkEnterable(dir string) error {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s is inside %s, which other users cannot enter (mode %v), so runs, which have uids of their own, could not reach it; choose a directory elsewhere (a data directory under /var/lib, say) or chmod o+x %s", dir, d, fi.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
