// Package worktree gives each session of a project whose workspace is a git
// repository its own `git worktree` on its own branch, and shows, merges
// and discards that branch. It wraps the git CLI.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"parley/safefile"
)

// Git runs the git CLI.
type Git struct {
	bin string
	// env is every command's environment (nil: the server's own); jail,
	// if set, confines every command; scratch is a directory the commands
	// may write besides the repository (Diff's private index).
	env     []string
	jail    Jail
	scratch string
}

// A Jail makes a git command run with the privileges of the project whose
// repository it works on (its uid, or inside its sandbox), not the
// server's: the repository, its config, hooks, attributes and the
// worktrees' .git files are the project's runs' to write, and whatever
// they make git execute (core.fsmonitor, a filter or merge driver, a
// gitdir pointing elsewhere) must get no more than those runs have.
type Jail func(cmd *exec.Cmd) error

// New returns a Git that runs bin ("" = git on PATH).
func New(bin string) *Git {
	if bin == "" {
		bin = "git"
	}
	return &Git{bin: bin}
}

// In is g for one project's repository: every command runs through jail
// (nil: as the server) with env as its whole environment, and scratch is
// a directory it may write outside the repository (nil env or "" scratch:
// the server's environment, its temporary directory).
func (g *Git) In(env []string, jail Jail, scratch string) *Git {
	return &Git{bin: g.bin, env: env, jail: jail, scratch: scratch}
}

// run runs git in dir and returns its stdout. The repository may belong to
// another user (runs execute as a per-project uid), so every directory is
// trusted explicitly: -c safe.directory=*. Parley's own commands never
// need a program the repository names (a hook, filter, driver, monitor):
// none runs (config.go).
func (g *Git) run(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	return g.runInput(ctx, dir, env, "", args...)
}

// runInput is run with stdin as git's input ("" = none): how a commit
// message reaches git, since every process of the machine may read
// another's arguments (/proc/<pid>/cmdline) and a message holds a
// session's title.
func (g *Git) runInput(ctx context.Context, dir string, env []string, stdin string, args ...string) (string, error) {
	safe, err := g.neutralised(ctx, dir)
	if err != nil {
		return "", err
	}
	return g.exec(ctx, dir, append(safe, env...), stdin, args...)
}

// exec runs one git command in dir as runInput does, without listing the
// repository's config first (neutralised does that, with exec).
func (g *Git) exec(ctx context.Context, dir string, env []string, stdin string, args ...string) (string, error) {
	pre := []string{"-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", dir}
	// Bounded: the repository can make git wait (a FIFO where it reads).
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.bin, append(pre, args...)...)
	base := g.env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(slices.Clip(base), append([]string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}, env...)...)
	if g.jail != nil {
		if err := g.jail(cmd); err != nil {
			return "", fmt.Errorf("git %s: confine: %w", strings.Join(args, " "), err)
		}
	}
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	ctx, kill := context.WithCancelCause(ctx)
	defer kill(nil)
	out, errb := &capped{max: maxGitOutput, kill: kill}, &capped{max: maxGitStderr, kill: kill}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Run(); err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, errTooMuchOutput) {
			err = cause
		}
		return out.String(), &Error{Args: args, Stderr: strings.TrimSpace(errb.String()), Err: err}
	}
	return out.String(), nil
}

// maxGitOutput bounds what Parley reads of one git command's output: the
// repository is the runs' to write, and a run that makes a million files
// must not make a page that lists them (the file browser, the diff) hold
// gigabytes. maxGitStderr bounds its error text.
const (
	maxGitOutput = 32 << 20
	maxGitStderr = 64 << 10
)

// errTooMuchOutput ends a git command that printed more than Parley reads.
var errTooMuchOutput = errors.New("printed more than Parley reads (32 MiB); the repository has too many changes to show")

// capped keeps at most max bytes and, past them, ends the command (kill),
// so git never blocks on a pipe nobody reads. The buffer is a field, not
// embedded: io.Copy would take an embedded bytes.Buffer's ReadFrom and
// never call Write.
type capped struct {
	buf  bytes.Buffer
	max  int
	kill context.CancelCauseFunc
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.kill(errTooMuchOutput)
		return 0, errTooMuchOutput
	}
	return c.buf.Write(p)
}

func (c *capped) String() string { return c.buf.String() }

// gitTimeout bounds one git command.
const gitTimeout = 5 * time.Minute

// Error is a failed git command, with what git printed.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Err.Error()
	}
	return "git " + strings.Join(e.Args, " ") + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// exitCode is the exit status of a failed git command, or -1.
func exitCode(err error) int {
	var x *exec.ExitError
	if errors.As(err, &x) {
		return x.ExitCode()
	}
	return -1
}

// BaseBranch says whether repo is the top of a git work tree with at least
// one commit and a branch checked out, and names that branch: the base a
// session's branch starts from and merges into. ok is false for a
// directory that is not such a repository (Parley then shares it).
func (g *Git) BaseBranch(ctx context.Context, repo string) (branch string, ok bool) {
	top, err := g.run(ctx, repo, nil, "rev-parse", "--show-toplevel")
	if err != nil || !sameDir(strings.TrimSpace(top), repo) {
		return "", false
	}
	if _, err := g.run(ctx, repo, nil, "rev-parse", "--verify", "-q", "HEAD"); err != nil {
		return "", false // no commit yet: nothing to branch from
	}
	b, err := g.run(ctx, repo, nil, "symbolic-ref", "--short", "-q", "HEAD")
	if err != nil || strings.TrimSpace(b) == "" {
		return "", false // a detached HEAD has no branch to merge into
	}
	return strings.TrimSpace(b), true
}

func sameDir(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// generated are the files Parley writes into every workspace; a session's
// commit must not carry them into the base branch.
var generated = []string{"/CLAUDE.md", "/.claude/settings.local.json", "/.parley/"} // .parley/uploads: attached files (package attach)

// Ensure makes dir a worktree of repo on branch: kept as it is when it is
// one already, checked out from branch when the branch exists (a discarded
// worktree comes back with its work), else on a new branch from base.
func (g *Git) Ensure(ctx context.Context, repo, dir, branch, base string) (created bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return false, nil
	}
	// A worktree whose directory was removed by hand leaves metadata that
	// would refuse the add.
	if _, err := g.run(ctx, repo, nil, "worktree", "prune"); err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return false, fmt.Errorf("worktree parent: %w", err)
	}
	if g.hasBranch(ctx, repo, branch) {
		_, err = g.run(ctx, repo, nil, "worktree", "add", dir, branch)
	} else {
		_, err = g.run(ctx, repo, nil, "worktree", "add", "-b", branch, dir, base)
	}
	if err != nil {
		return false, err
	}
	return true, g.exclude(ctx, repo)
}

func (g *Git) hasBranch(ctx context.Context, repo, branch string) bool {
	_, err := g.run(ctx, repo, nil, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
	return err == nil
}

// exclude lists Parley's generated files in the repository's info/exclude,
// shared by all its worktrees, so a session's commit leaves them out.
func (g *Git) exclude(ctx context.Context, repo string) error {
	common, err := g.run(ctx, repo, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	// The repository is the runs' to write, and this runs as the server:
	// under the common dir (a run that made info/ a link cannot have this
	// written elsewhere), no link, FIFO or outsized file read or written
	// (such an exclude file is left as it is), and what is created here
	// is given the repository's owner, readable by git as the project.
	root, err := os.OpenRoot(strings.TrimSpace(common))
	if err != nil {
		return fmt.Errorf("info/exclude: %w", err)
	}
	defer root.Close()
	// The repository's .git may say the common dir is anywhere (a gitdir
	// file is the runs' to write): Parley writes only into one owned as
	// the repository is, never into another user's repository.
	owner, err := root.Stat(".")
	if err != nil {
		return fmt.Errorf("info/exclude: %w", err)
	}
	uid, gid := ownerOf(owner)
	top, err := os.Stat(repo)
	if err != nil {
		return fmt.Errorf("info/exclude: %w", err)
	}
	if !sameOwner(top, owner) {
		return nil // another user's: left alone
	}
	const path = "info/exclude"
	old, err := safefile.ReadIn(root, path, maxExclude)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case safefile.Refused(err):
		return nil
	case err != nil:
		return fmt.Errorf("info/exclude: %w", err)
	}
	var add []string
	for _, p := range generated {
		if !bytes.Contains(old, []byte("\n"+p+"\n")) && !bytes.HasPrefix(old, []byte(p+"\n")) {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if _, err := root.Lstat("info"); errors.Is(err, fs.ErrNotExist) {
		if err := root.Mkdir("info", 0o755); err != nil {
			return fmt.Errorf("info/exclude: %w", err)
		}
		if err := ownInfo(root, uid, gid); err != nil {
			return fmt.Errorf("info/exclude: %w", err)
		}
	}
	text := "# Written by Parley: files it generates in every worktree.\n" + strings.Join(add, "\n") + "\n"
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		text = "\n" + text
	}
	f, err := root.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("info/exclude: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return err // a FIFO or device made meanwhile: left alone
	}
	if fi.Size() == 0 { // made just now
		if err := f.Chmod(0o644); err != nil {
			return fmt.Errorf("info/exclude: %w", err)
		}
		_ = f.Chown(uid, gid) // as root; otherwise it is ours already
	}
	_, err = f.WriteString(text)
	return err
}

// ownInfo makes the info dir Parley just made in root 0755 and gives it
// to uid and gid, through its descriptor: the runs may have swapped it
// for a link meanwhile (os.Root's Chmod would follow one).
func ownInfo(root *os.Root, uid, gid int) error {
	d, err := root.OpenFile("info", os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Chmod(0o755); err != nil {
		return err
	}
	_ = d.Chown(uid, gid) // as root; otherwise it is ours already
	return nil
}

// maxExclude bounds the info/exclude file Parley reads to add its lines.
const maxExclude = 1 << 20

// ownerOf is the owner and group of fi's file.
func ownerOf(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return os.Getuid(), os.Getgid()
}

// sameOwner reports whether a and b have one owner.
func sameOwner(a, b fs.FileInfo) bool {
	ua, _ := ownerOf(a)
	ub, _ := ownerOf(b)
	return ua == ub
}

// Remove deletes the worktree at dir and its metadata; its branch stays.
func (g *Git) Remove(ctx context.Context, repo, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := g.run(ctx, repo, nil, "worktree", "remove", "--force", "--force", dir); err != nil {
			return err
		}
	}
	_, err := g.run(ctx, repo, nil, "worktree", "prune")
	return err
}

// DeleteBranch deletes branch from repo; a branch that is gone already is
// not an error.
func (g *Git) DeleteBranch(ctx context.Context, repo, branch string) error {
	if !g.hasBranch(ctx, repo, branch) {
		return nil
	}
	_, err := g.run(ctx, repo, nil, "branch", "-D", branch)
	return err
}
