package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// mount is one cgroup file system in mountinfo.
type mount struct {
	root, point string
	v2          bool
	controllers []string // v1: the super options naming controllers
}

// hierarchies returns this process's own cgroup directory in each
// hierarchy Parley uses: the v1 ones holding pids, memory, cpu or
// freezer (each once), or else the unified one; v2 says which.
func hierarchies(mountinfo, selfCgroup string) (dirs []string, v2 bool, err error) {
	mounts, err := readMounts(mountinfo)
	if err != nil {
		return nil, false, err
	}
	own, err := readOwn(selfCgroup)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	for _, c := range v1Controllers {
		for _, m := range mounts {
			if m.v2 || !slices.Contains(m.controllers, c) || seen[m.point] {
				continue
			}
			seen[m.point] = true
			if d, ok := dirIn(m, own[strings.Join(m.controllers, ",")]); ok {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) > 0 {
		return dirs, false, nil
	}
	for _, m := range mounts {
		if m.v2 {
			if d, ok := dirIn(m, own[""]); ok {
				return []string{d}, true, nil
			}
		}
	}
	return nil, false, errors.New("no cgroup hierarchy is mounted for this process")
}

// dirIn maps a path of /proc/self/cgroup onto the mount's directory.
func dirIn(m mount, path string) (string, bool) {
	if path == "" {
		return "", false
	}
	rel, ok := strings.CutPrefix(path, m.root)
	if !ok && m.root != "/" {
		return "", false // the process's cgroup lies outside what is mounted
	}
	if !ok {
		rel = path
	}
	return filepath.Join(m.point, rel), true
}

// readMounts reads the cgroup file systems of a mountinfo file:
// "ID PARENT MAJ:MIN ROOT POINT OPTS ... - FSTYPE SOURCE SUPEROPTS".
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 {
			continue
		}
		m := mount{root: unescape(fields[3]), point: unescape(fields[4])}
		switch tail[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(tail[2], ",") {
				if o != "rw" && o != "ro" && !strings.Contains(o, "=") {
					m.controllers = append(m.controllers, o)
				}
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// readOwn reads /proc/self/cgroup ("ID:CONTROLLERS:PATH") into
// controllers → path; v2's line has no controllers ("").
func readOwn(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read own cgroups: %w", err)
	}
	own := map[string]string{}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 {
			own[parts[1]] = parts[2]
		}
	}
	return own, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%3o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
