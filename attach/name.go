package attach

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds a file name (most file systems allow 255 bytes;
// Parley may add "-2" to avoid an existing file).
const MaxNameBytes = 200

// CleanName returns the name an upload is saved as, or a refusal. A file
// name is never a path: a name holding a slash or backslash, NUL or
// another control character or a bidirectional control (U+202E and its
// kin, which make a name read as another), invalid UTF-8, "." or "..",
// or longer than MaxNameBytes is refused, not reduced, so the file is
// saved under the very name the member sees. Spaces around it are trimmed.
func CleanName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", refuse("That file has no name: give it one and attach it again.")
	case !utf8.ValidString(name):
		return "", refuse("That file's name is not valid UTF-8 text: rename it and attach it again.")
	case strings.ContainsAny(name, `/\`):
		return "", refuse("%q is a path, not a file name: Parley saves attachments only under a name of its own folder. Rename the file and attach it again.", name)
	case name == "." || name == "..":
		return "", refuse("%q is not a file name: rename the file and attach it again.", name)
	case len(name) > MaxNameBytes:
		return "", refuse("That file's name is %d bytes long; the limit is %d. Rename it and attach it again.", len(name), MaxNameBytes)
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return "", refuse("%q holds a control character: rename the file and attach it again.", name)
		}
		if unicode.Is(unicode.Bidi_Control, r) { // "a\u202efdp.sh" would read as "ahs.pdf"
			return "", refuse("%q holds a character that reverses how text reads (a right-to-left override): rename the file and attach it again.", name)
		}
	}
	return name, nil
}
