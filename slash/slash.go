// Package slash finds the slash commands a session's composer offers: the
// ones the claude CLI reports in its system/init event (slash_commands) and
// the project's own, .claude/commands/**.md in its workspace, which Parley
// expands itself because its runs start with --setting-sources "" and the
// CLI then loads none of them (measured on 2.1.328, docs/cli-control.md).
//
// A workspace is written by the project's runs: every file is read through
// safefile (no symbolic link followed, nothing but a regular file, a size
// cap) under an os.Root that no link leads out of.
package slash

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"parley/safefile"
)

// Command is one command the composer offers.
type Command struct {
	Name        string `json:"name"` // without the slash: "model", "sub:lint"
	Description string `json:"description"`
	Source      string `json:"source"` // "cli" or "project"
}

// Limits on what is read of a workspace's commands.
const (
	maxFileBytes = 64 << 10
	maxCommands  = 200
	maxDepth     = 4
	maxDescRunes = 120
	maxVisits    = 1000 // entries a listing looks at, in all directories
)

// commandsDir is where a project keeps its commands, as the CLI reads them.
const commandsDir = ".claude/commands"

// ProjectCommands lists the commands in workspace's .claude/commands: a
// file sub/lint.md is the command "sub:lint" (as the CLI names it), its
// description the front matter's description: or else its first line. A
// symbolic link is skipped, file or directory; so is a file over 64 KiB.
// At most maxVisits entries are looked at in all, however many folders a
// run planted. A workspace without commands has none (no error).
func ProjectCommands(workspace string) ([]Command, error) {
	root, err := safefile.RootUnder(workspace)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer root.Close()
	if !realDir(root, ".claude") || !realDir(root, commandsDir) {
		return nil, nil
	}
	w := &walker{root: root}
	w.walk(commandsDir, "", 0)
	out := w.out
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// realDir says whether name under root is a directory, not a link to one.
func realDir(root *os.Root, name string) bool {
	fi, err := root.Lstat(name)
	return err == nil && fi.IsDir()
}

// walker walks a workspace's commands, counting the entries it looks at.
type walker struct {
	root *os.Root
	out  []Command
	seen int // entries looked at, in all directories
}

// walk adds the commands of dir (prefix: the names of its parents, joined
// with ":") to w.out.
func (w *walker) walk(dir, prefix string, depth int) {
	f, err := w.root.Open(dir)
	if err != nil {
		return
	}
	entries, err := f.ReadDir(maxCommands)
	f.Close()
	if err != nil && len(entries) == 0 {
		return
	}
	for _, e := range entries {
		if len(w.out) >= maxCommands || w.seen >= maxVisits {
			return
		}
		w.seen++
		name, p := e.Name(), path.Join(dir, e.Name())
		fi, err := w.root.Lstat(p) // never a link, whatever the entry said
		switch {
		case err != nil || fi.Mode()&fs.ModeSymlink != 0:
		case fi.IsDir() && depth+1 < maxDepth:
			w.walk(p, prefix+name+":", depth+1)
		case fi.Mode().IsRegular() && strings.HasSuffix(name, ".md") && validName(strings.TrimSuffix(name, ".md")):
			b, err := safefile.ReadIn(w.root, p, maxFileBytes)
			if err != nil {
				continue
			}
			meta, body := frontMatter(string(b))
			w.out = append(w.out, Command{Name: prefix + strings.TrimSuffix(name, ".md"),
				Description: describe(meta, body), Source: "project"})
		}
	}
}

// validName keeps to names a person types after a slash.
func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// frontMatter splits a command file into its front matter's key: value
// lines and its body. Only flat "key: value" lines are read.
func frontMatter(s string) (map[string]string, string) {
	s = strings.TrimPrefix(s, "\ufeff")
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return nil, s
	}
	head, body, ok := strings.Cut(rest, "\n---")
	if !ok {
		return nil, s
	}
	body = strings.TrimPrefix(strings.TrimPrefix(body, "\r"), "\n")
	meta := map[string]string{}
	for line := range strings.Lines(head) {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			meta[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return meta, body
}

// describe is a command's description: its front matter's, else the first
// line of its body, cut to a line's length.
func describe(meta map[string]string, body string) string {
	d := meta["description"]
	if d == "" {
		for line := range strings.Lines(body) {
			if t := strings.TrimSpace(strings.TrimLeft(line, "# ")); t != "" {
				d = t
				break
			}
		}
	}
	if r := []rune(d); len(r) > maxDescRunes {
		d = string(r[:maxDescRunes-1]) + "…"
	}
	return d
}
