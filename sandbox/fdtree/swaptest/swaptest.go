// Package swaptest performs, for tests, the attack that made a run root:
// while Parley (as root) walks a tree the run can write, the run, woken
// by inotify when the walk reaches the tree, swaps directories the walk
// has listed but not yet entered for symbolic links to a root-only
// directory outside. A walker that follows such a link hands what is
// behind it to the project's uid.
package swaptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Attack is one try at the swap on one tree.
type Attack struct {
	// Dir is the directory the attacker watches and swaps in: the
	// project's uid owns it; dirs d000… in it belong to root, each
	// holding root's files, so that the walk has work to do.
	Dir string
	// Target is root's directory outside the tree, mode 0750, holding
	// root's file "secret", mode 0600: what the links lead to.
	Target string
	uid    int
	n      int
	swaps  []time.Time // when each swap was done
}

// New lays out an attack on dir (made, given to uid) with n directories,
// and a target in a fresh directory of its own. dir's ancestors must be
// enterable by uid.
func New(t *testing.T, dir string, uid, n int) *Attack {
	t.Helper()
	a := &Attack{Dir: dir, Target: filepath.Join(t.TempDir(), "target"), uid: uid, n: n}
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.Chown(dir, uid, uid))
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i))
		must(t, os.Mkdir(d, 0o755))
		for j := range 3 {
			must(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), nil, 0o644))
		}
	}
	must(t, os.Mkdir(a.Target, targetMode))
	must(t, os.Chmod(a.Target, targetMode))
	must(t, os.WriteFile(filepath.Join(a.Target, "secret"), []byte("root only"), 0o600))
	return a
}

// Start starts the attacker: a goroutine on a thread of its own whose
// file-system uid and gid are the project's (setfsuid: it may do on the
// tree exactly what the project's runs may), watching Dir with inotify.
// At the first event (the walk opening Dir, or changing an entry's
// owner) it swaps the later half of the dirs, last first, for links to
// Target. Start returns once the watch is in place; stop ends the
// attacker and returns when each swap was done.
func (a *Attack) Start(t *testing.T) (stop func() []time.Time) {
	t.Helper()
	ready, done := make(chan error, 1), make(chan struct{})
	result := make(chan []time.Time, 1)
	go func() {
		// The thread stays locked and so ends with the goroutine: its
		// lowered fsuid never serves another goroutine.
		runtime.LockOSThread()
		result <- a.attack(ready, done)
	}()
	if err := <-ready; err != nil {
		t.Fatalf("attacker: %v", err)
	}
	return func() []time.Time {
		close(done)
		return <-result
	}
}

// attack runs on the attacker's thread; see Start.
func (a *Attack) attack(ready chan<- error, done <-chan struct{}) []time.Time {
	// setfsgid first: once the fsuid is not 0, setfsgid still works (it
	// needs CAP_SETGID, which a lowered fsuid keeps), but keep the order
	// a process dropping privileges would use.
	unix.Setfsgid(a.uid)
	unix.Setfsuid(a.uid)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		ready <- err
		return nil
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, a.Dir, unix.IN_OPEN|unix.IN_ATTRIB|unix.IN_ACCESS); err != nil {
		ready <- err
		return nil
	}
	ready <- nil
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-done:
			return nil
		default:
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 20); n <= 0 {
			continue
		}
		if _, err := unix.Read(fd, buf); err != nil {
			continue
		}
		swaps := a.swap()
		<-done
		return swaps
	}
}

// swap replaces the later half of the dirs, last first, by links to
// Target, and reports when it replaced each.
func (a *Attack) swap() []time.Time {
	var swaps []time.Time
	for i := a.n - 1; i >= a.n/2; i-- {
		name := filepath.Join(a.Dir, fmt.Sprintf("d%03d", i))
		if unix.Rename(name, filepath.Join(a.Dir, fmt.Sprintf(".gone%03d", i))) != nil {
			continue
		}
		if unix.Symlink(a.Target, name) == nil {
			swaps = append(swaps, time.Now())
		}
	}
	return swaps
}

// Flip starts an attacker (on its own thread with the uid's fsuid, as
// Start's) that swaps the walk's own top, Dir's entry name, for a link to
// Target and back, over and over, until stop; stop returns how many
// times the link was put in place. Each swap is one renameat2
// RENAME_EXCHANGE: the name is never missing, only a directory one
// moment and a link the next. It is for a walk whose top is in Dir.
func (a *Attack) Flip(t *testing.T, name string) (stop func() int) {
	t.Helper()
	done, result := make(chan struct{}), make(chan int, 1)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with it
		unix.Setfsgid(a.uid)
		unix.Setfsuid(a.uid)
		dir, link := filepath.Join(a.Dir, name), filepath.Join(a.Dir, ".link-"+name)
		unix.Unlink(link)
		if err := unix.Symlink(a.Target, link); err != nil {
			ready <- err
			return
		}
		ready <- nil
		flips := 0
		for {
			select {
			case <-done:
				unix.Unlink(link) // after an even number of exchanges
				result <- flips
				return
			default:
			}
			if unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) != nil {
				continue
			}
			flips++
			dwell(flips)
			for unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) != nil {
			}
			dwell(flips + 1)
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("attacker: %v", err)
	}
	return func() int {
		close(done)
		return <-result
	}
}

// dwell spins for 0 to 63 µs (varied by i), so that the link and the
// directory each stay in place for a while, at varying moments of the
// walk.
func dwell(i int) {
	end := time.Now().Add(time.Duration(i*37%64) * time.Microsecond)
	for time.Now().Before(end) {
	}
}

// Broken reports, as a sentence, whether anything of Target left root:
// "" if all of it is still root's.
func (a *Attack) Broken() string {
	for _, p := range []string{a.Target, filepath.Join(a.Target, "secret")} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Sprintf("%s: %v", p, err)
		}
		if st.Uid != 0 || st.Gid != 0 {
			return fmt.Sprintf("%s, root's, now belongs to %d:%d", p, st.Uid, st.Gid)
		}
	}
	fi, err := os.Lstat(a.Target)
	if err != nil {
		return err.Error()
	}
	if fi.Mode().Perm() != targetMode {
		return fmt.Sprintf("%s, root's, mode %o, is %o now", a.Target, targetMode, fi.Mode().Perm())
	}
	return ""
}

// targetMode is Target's mode: no other uid may enter it (and any chmod
// through a link shows).
const targetMode = 0o750

// Given reports, as a sentence, whether the walk failed to give the
// tree's first directory and its files to the uid: "" if it gave them.
// (The attacker swaps only the later half: the first is the walk's to do.)
func (a *Attack) Given() string {
	d := filepath.Join(a.Dir, "d000")
	for _, p := range []string{d, filepath.Join(d, "f0")} {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Sprintf("%s: %v", p, err)
		}
		if int(st.Uid) != a.uid || int(st.Gid) != a.uid {
			return fmt.Sprintf("%s belongs to %d:%d, not to %d", p, st.Uid, st.Gid, a.uid)
		}
	}
	return ""
}

// Try lays out a fresh attack on dir (see New), starts the attacker, calls
// walk, and stops the attacker. It returns the attack (to check with
// Broken and Given), how many dirs were swapped before walk returned
// (the attack raced the walk only if some were), and walk's own error:
// a walker may refuse what it met.
func Try(t *testing.T, dir string, uid, n int, walk func() error) (a *Attack, during int, err error) {
	t.Helper()
	a = New(t, dir, uid, n)
	stop := a.Start(t)
	err = walk()
	end := time.Now()
	for _, at := range stop() {
		if at.Before(end) {
			during++
		}
	}
	return a, during, err
}

// EnterableTempDir is a t.TempDir that other uids may enter (its parent,
// made by the test framework, is 0700).
func EnterableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.Chmod(filepath.Dir(dir), 0o711))
	must(t, os.Chmod(dir, 0o711))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
}
