package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a-h/templ"

	"parley/streamjson"
	"parley/views"
)

// maxSummary bounds the one-line summary of a tool call.
const maxSummary = 120

// toolInput holds the input fields Claude Code's built-in tools use.
type toolInput struct {
	Command      string `json:"command"`
	Description  string `json:"description"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Pattern      string `json:"pattern"`
	Path         string `json:"path"`
	URL          string `json:"url"`
	Query        string `json:"query"`
	Prompt       string `json:"prompt"`
	Question     string `json:"question"`
	Content      string `json:"content"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	SubagentType string `json:"subagent_type"`
	Edits        []struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	} `json:"edits"`
	Todos []json.RawMessage `json:"todos"`
}

// toolCard turns a tool_use block into its card.
func toolCard(id, name string, raw json.RawMessage) views.Tool {
	var in toolInput
	_ = json.Unmarshal(raw, &in)
	t := views.Tool{ID: id, Name: name, Input: prettyJSON(raw), Summary: oneLine(toolSummary(name, in, raw))}
	switch name {
	case "Edit":
		t.Diff = lineDiff(in.OldString, in.NewString)
	case "MultiEdit":
		for i, e := range in.Edits {
			if i > 0 {
				t.Diff = append(t.Diff, views.DiffLine{Op: ' ', Text: "…"})
			}
			t.Diff = append(t.Diff, lineDiff(e.OldString, e.NewString)...)
		}
	case "Write":
		t.Diff = ops('+', splitLines(in.Content))
	case "Task", "Agent":
		t.Agent = true
	}
	if len(t.Diff) > 2000 {
		t.Diff = append(t.Diff[:2000], views.DiffLine{Op: ' ', Text: "… (" + strconv.Itoa(len(t.Diff)-2000) + " more lines in the log)"})
	}
	return t
}

// toolSummary is the one thing worth seeing of a call without opening it.
func toolSummary(name string, in toolInput, raw json.RawMessage) string {
	switch name {
	case "Bash":
		return "$ " + in.Command
	case "Read", "Write", "Edit", "MultiEdit":
		return in.FilePath
	case "NotebookEdit":
		return in.NotebookPath
	case "Glob", "Grep":
		if in.Path != "" {
			return in.Pattern + "  in " + in.Path
		}
		return in.Pattern
	case "WebFetch":
		return in.URL
	case "WebSearch":
		return in.Query
	case "Task", "Agent":
		if in.SubagentType != "" {
			return in.Description + " (" + in.SubagentType + ")"
		}
		return in.Description
	case "TodoWrite":
		return strconv.Itoa(len(in.Todos)) + " " + plural(len(in.Todos), "item", "items")
	}
	if in.Question != "" {
		return in.Question
	}
	return firstString(raw)
}

// firstString is the first string value of a JSON object, for tools the
// page knows nothing about.
func firstString(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"description", "command", "path", "name", "title", "text"} {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// oneLine keeps the first line of s, shortened to maxSummary runes.
func oneLine(s string) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(line) > maxSummary {
		return string([]rune(line)[:maxSummary-1]) + "…"
	}
	if rest != "" {
		return line + " …"
	}
	return line
}

// toolResultView renders a tool result: short output open, long output
// folded behind its first line.
func toolResultView(id, text string, isError bool) templ.Component {
	text = strings.TrimRight(text, "\n")
	lines := strings.Count(text, "\n") + 1
	if text == "" {
		lines = 0
	}
	preview := ""
	if lines > 6 {
		preview = oneLine(text)
	}
	return views.ToolResult(id, clip(text), isError, lines, preview)
}

// subagentSteps lists what a subagent (a Task tool's child) did inside the
// Task card: its tool calls and a line of its text, unobtrusively.
func subagentSteps(parent string, blocks []streamjson.ContentBlock) []templ.Component {
	var out []templ.Component
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			var in toolInput
			_ = json.Unmarshal(b.Input, &in)
			out = append(out, views.SubagentStep(parent, "tool", "↳ "+b.Name+" "+oneLine(toolSummary(b.Name, in, b.Input))))
		case "text":
			if s := oneLine(b.Text); s != "" {
				out = append(out, views.SubagentStep(parent, "text", "↳ "+s))
			}
		}
	}
	return out
}
