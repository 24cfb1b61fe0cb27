package slash

// cliDescriptions describe the CLI's own commands: its system/init event
// lists only their names (slash_commands). Measured on 2.1.328; a name
// not here is offered without a description.
var cliDescriptions = map[string]string{
	"model":           "Switch the model (/model NAME); Parley offers the models the project allows",
	"compact":         "Summarize the conversation so far to free context",
	"clear":           "Start the conversation afresh",
	"context":         "Show what fills the context window",
	"init":            "Write a CLAUDE.md describing this codebase",
	"review":          "Review a pull request",
	"security-review": "Review the pending changes for security issues",
	"code-review":     "Review the code changes",
	"usage":           "Show usage and limits",
	"cost":            "Show the session's cost",
	"effort":          "Set the reasoning effort",
	"mcp":             "Show the MCP servers",
	"agents":          "Show the subagents",
	"simplify":        "Simplify recently changed code",
	"debug":           "Help debug a problem",
	"verify":          "Check that the work is done and correct",
	"recap":           "Summarize what happened in this session",
	"rename":          "Rename the conversation",
}

// CLICommands are the commands a session's CLI reported (the names of its
// latest system/init event's slash_commands), with what Parley knows of
// them. Names starting with "__" are the CLI's internal ones and skipped.
func CLICommands(names []string) []Command {
	out := make([]Command, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] || len(n) > 64 || n[0] == '_' {
			continue
		}
		seen[n] = true
		out = append(out, Command{Name: n, Description: cliDescriptions[n], Source: "cli"})
	}
	return out
}

// Merge lists the project's commands first, then the CLI's not named the
// same: a project command is what a typed "/name" runs.
func Merge(project, cli []Command) []Command {
	out := append(make([]Command, 0, len(project)+len(cli)), project...)
	mine := map[string]bool{}
	for _, c := range project {
		mine[c.Name] = true
	}
	for _, c := range cli {
		if !mine[c.Name] {
			out = append(out, c)
		}
	}
	return out
}
