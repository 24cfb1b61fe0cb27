package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"parley/runner"
)

// etcFiles are the files of /etc a run's programs need (the dynamic
// loader's cache, the Debian alternatives behind awk or editor, name
// service and time zone files, CA certificates for git): nothing an
// operator puts secrets in (no profile.d, environment, npmrc or shadow).
var etcFiles = []string{
	"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "protocols", "services",
	"ssl", "ca-certificates", "ca-certificates.conf",
	"localtime", "timezone", "locale.alias", "mime.types", "magic", "magic.mime", "terminfo", "inputrc",
	"bash.bashrc", "os-release", "debian_version",
}

// systemBinds mount the system's programs and libraries read-only, the
// top-level links to them as the distribution has them (/bin -> usr/bin on
// a merged /usr, a directory elsewhere), a /proc of the run's own pid
// namespace, a minimal /dev and fresh temporary directories.
func systemBinds() []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	return append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp")
}

// mount is one bind (or an empty tmpfs) a run gets.
type mount struct {
	op, path string
}

// runBinds mount the run's own directories read-write and its token files
// and programs read-only, each at its own path, and an empty tmpfs over
// each hidden directory that one of those holds. A mount inside another
// must come after it, so they go parents first.
func runBinds(s runner.Spec, programs, hide []string) []string {
	var ms []mount
	for _, d := range append([]string{s.Workspace, s.ConfigDir, s.Home}, s.WritableDirs...) {
		if d != "" {
			ms = append(ms, mount{"--bind", filepath.Clean(d)})
		}
	}
	for _, f := range append(programs, s.AskConfigPath, s.MCPConfigPath, s.InstructionsPath) {
		if f != "" && !isSystem(f) && exists(f) {
			ms = append(ms, mount{"--ro-bind", filepath.Clean(f)})
		}
	}
	var hidden []mount
	for _, h := range hide {
		if slices.ContainsFunc(ms, func(m mount) bool { return inside(h, m.path) }) && exists(h) {
			hidden = append(hidden, mount{"--tmpfs", h})
		}
	}
	ms = append(ms, hidden...)
	slices.SortStableFunc(ms, func(a, b mount) int { return depth(a.path) - depth(b.path) })
	var args []string
	for _, m := range ms {
		if m.op == "--tmpfs" {
			args = append(args, m.op, m.path)
		} else {
			args = append(args, m.op, m.path, m.path)
		}
	}
	return args
}

// isSystem reports whether path is in the system's binds already.
func isSystem(path string) bool {
	top, _, _ := strings.Cut(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	return slices.Contains([]string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}, top)
}

// inside reports whether path lies strictly inside dir.
func inside(path, dir string) bool {
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }
