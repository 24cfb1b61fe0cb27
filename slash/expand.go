package slash

import (
	"path"
	"strings"

	"parley/safefile"
)

// Expand turns a prompt "/name args" that names one of workspace's own
// commands into the prompt Claude gets: the typed line, then the
// command's body with $ARGUMENTS replaced by args (the CLI adds
// "ARGUMENTS: args" to a body that does not use them; so does Expand).
// Only the text is taken: front matter such as allowed-tools or model
// is not applied, so a command file a run wrote cannot widen what the
// session may do. ok is false when text names no such command.
func Expand(workspace, text string) (prompt string, ok bool) {
	name, args, isCmd := Parse(text)
	if !isCmd {
		return "", false
	}
	parts := strings.Split(name, ":")
	for _, p := range parts {
		if !validName(p) {
			return "", false
		}
	}
	root, err := safefile.RootUnder(workspace)
	if err != nil {
		return "", false
	}
	defer root.Close()
	dir := commandsDir
	if !realDir(root, ".claude") || !realDir(root, dir) {
		return "", false
	}
	for _, p := range parts[:len(parts)-1] {
		if dir = path.Join(dir, p); !realDir(root, dir) {
			return "", false
		}
	}
	b, err := safefile.ReadIn(root, path.Join(dir, parts[len(parts)-1]+".md"), maxFileBytes)
	if err != nil {
		return "", false
	}
	_, body := frontMatter(string(b))
	switch {
	case strings.Contains(body, "$ARGUMENTS"):
		body = strings.ReplaceAll(body, "$ARGUMENTS", args)
	case args != "":
		body = strings.TrimRight(body, "\n") + "\n\nARGUMENTS: " + args
	}
	return strings.TrimSpace(text) + "\n\n" + strings.TrimSpace(body), true
}

// Parse splits a prompt "/name args" into the command's name and its
// arguments; isCmd is false for text that does not start with a slash
// and a name ("/ hello", "/usr/bin is…" with a second slash).
func Parse(text string) (name, args string, isCmd bool) {
	t := strings.TrimSpace(text)
	rest, ok := strings.CutPrefix(t, "/")
	if !ok {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, args = name[:i], strings.TrimSpace(rest[i:])
	}
	if name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return name, strings.TrimSpace(args), true
}
