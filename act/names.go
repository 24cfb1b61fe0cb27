package act

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// What a session's own Claude options may name, on the settings page and in
// MCP create_session alike.
var (
	// ModelName: the CLI's aliases (opus, sonnet) and full ids, with the
	// [1m] style suffixes; nothing that could read as a flag.
	ModelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]{0,99}$`)
	// ToolName: a tool name (Read, mcp__server__tool) with an optional
	// rule in parentheses, as the CLI's permission rules are written.
	ToolName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*(\([^()\x00-\x1f]*\))?$`)
	// PermissionModes are the CLI's permission modes.
	PermissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}
)

// Title makes a session title from its first prompt: its first line, at
// most 80 characters.
func Title(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	if utf8.RuneCountInString(line) > 80 {
		line = string([]rune(line)[:79]) + "…"
	}
	return line
}
