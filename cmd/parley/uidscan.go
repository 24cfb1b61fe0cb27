package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// uidScan looks for what on the machine uses a range of uids: accounts
// (users, groups, subordinate id ranges), processes and, when files is
// set, the owners of files in the places any user may write. It is not a
// walk of the whole disk: the file trees are read to scanDepth levels and
// scanEntries entries each.
type uidScan struct {
	proc     string   // /proc
	accounts []string // /etc/passwd and /etc/group: name:x:ID:...
	subIDs   []string // /etc/subuid and /etc/subgid: name:FIRST:COUNT
	trees    []string // where files of other users are
	dataDir  string   // this installation's: a process working there is its own
	files    bool     // look at the trees' files too
	// ours, if set, says a uid is this installation's own (its projects'
	// uids, under a range set by hand that it used before).
	ours func(uid int) bool
}

const (
	scanDepth   = 3
	scanEntries = 200_000
)

// systemScan is the scan of this machine for an installation in dataDir.
func systemScan(dataDir string) uidScan {
	abs, _ := filepath.Abs(dataDir)
	return uidScan{proc: "/proc", accounts: []string{"/etc/passwd", "/etc/group"},
		subIDs: []string{"/etc/subuid", "/etc/subgid"},
		trees:  []string{"/tmp", "/var/tmp", "/dev/shm", "/home", "/run"}, dataDir: abs}
}

// inUse names the first thing found that uses a uid of first-last, or "".
func (s uidScan) inUse(first, last int) string {
	if use := s.accountsUse(first, last); use != "" {
		return use
	}
	if use := s.processUse(first, last); use != "" {
		return use
	}
	if s.files {
		return s.fileUse(first, last)
	}
	return ""
}

// accountsUse names a user or group with an id in the range, or a
// subordinate id range that overlaps it.
func (s uidScan) accountsUse(first, last int) string {
	for _, path := range s.accounts {
		use := scanLines(path, func(f []string) string {
			if len(f) > 2 {
				if id, err := strconv.Atoi(f[2]); err == nil && id >= first && id <= last {
					return fmt.Sprintf("%s names %s with id %d", path, f[0], id)
				}
			}
			return ""
		})
		if use != "" {
			return use
		}
	}
	for _, path := range s.subIDs {
		use := scanLines(path, func(f []string) string {
			if len(f) > 2 {
				start, err1 := strconv.Atoi(f[1])
				count, err2 := strconv.Atoi(f[2])
				if err1 == nil && err2 == nil && start <= last && start+count-1 >= first {
					return fmt.Sprintf("%s gives %s the ids %d-%d", path, f[0], start, start+count-1)
				}
			}
			return ""
		})
		if use != "" {
			return use
		}
	}
	return ""
}

// scanLines calls match on each line of a colon-separated file (a missing
// file has none) and returns its first answer that is not "".
func scanLines(path string, match func(fields []string) string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if use := match(strings.Split(sc.Text(), ":")); use != "" {
			return use
		}
	}
	return ""
}

// processUse names a process, not this installation's, whose user or
// group ids (real, effective, saved or file system) are in the range.
func (s uidScan) processUse(first, last int) string {
	dirs, _ := filepath.Glob(filepath.Join(s.proc, "[0-9]*"))
	for _, d := range dirs {
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue // gone meanwhile
		}
		id, ok := statusID(status, first, last)
		if !ok || s.isOurs(id) || s.runOfOurs(d) {
			continue
		}
		return fmt.Sprintf("process %s runs as uid or gid %d", filepath.Base(d), id)
	}
	return ""
}

// statusID finds an id of the range in /proc/<pid>/status's Uid: and Gid:
// lines ("Uid:\treal\teffective\tsaved\tfs").
func statusID(status []byte, first, last int) (int, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		name, rest, _ := strings.Cut(line, ":")
		if name != "Uid" && name != "Gid" {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if id, err := strconv.Atoi(f); err == nil && id >= first && id <= last {
				return id, true
			}
		}
	}
	return 0, false
}

// runOfOurs says the process is one of this installation's runs (another
// replica's, on the same host): it works in the data dir, or names it in
// its environment (CLAUDE_CONFIG_DIR, HOME).
func (s uidScan) runOfOurs(procDir string) bool {
	if s.dataDir == "" {
		return false
	}
	if cwd, err := os.Readlink(filepath.Join(procDir, "cwd")); err == nil && within(cwd, s.dataDir) {
		return true
	}
	env, err := os.ReadFile(filepath.Join(procDir, "environ"))
	return err == nil && bytes.Contains(env, []byte("="+s.dataDir+string(filepath.Separator)))
}

// fileUse names a file in the trees owned by a user or group of the range.
func (s uidScan) fileUse(first, last int) string {
	for _, root := range s.trees {
		n := 0
		var use string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: go on with the rest
			}
			if n++; n > scanEntries {
				return filepath.SkipAll
			}
			if d.IsDir() && p != root && within(p, s.dataDir) {
				return filepath.SkipDir // this installation's own files
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok {
				return nil
			}
			for _, id := range []int{int(st.Uid), int(st.Gid)} {
				if id >= first && id <= last && !s.isOurs(id) {
					use = fmt.Sprintf("%s belongs to uid or gid %d", p, id)
					return filepath.SkipAll
				}
			}
			if d.IsDir() && depth(root, p) >= scanDepth {
				return filepath.SkipDir
			}
			return nil
		})
		if use != "" {
			return use
		}
	}
	return ""
}

func (s uidScan) isOurs(id int) bool { return s.ours != nil && s.ours(id) }

// depth is how many levels p is below root.
func depth(root, p string) int {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}

// within says p is dir or under it.
func within(p, dir string) bool {
	return dir != "" && (p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)))
}
