// Package asks is `parley asks`: it lists the open asks a person may answer,
// across their projects, and answers one from a terminal. It reaches Parley
// through a [Client]: [DB] works on the server's database as the other admin
// subcommands do; a client for the server's API with a personal token can
// stand beside it without changing the command.
package asks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"parley/askuser"
	"parley/runner"
)

// Ask is an open ask as the terminal shows it.
type Ask struct {
	ID        string
	Project   string
	SessionID string
	Session   string // the session's title
	Asked     time.Time
	Detached  bool // its process has ended; an answer resumes the session
	runner.AskPayload
}

// Client reaches Parley for one person.
type Client interface {
	// Open lists the asks the person may answer, oldest first.
	Open(ctx context.Context) ([]Ask, error)
	// Answer applies resp to ask id through the server, exactly as an
	// answer from a page, and returns what happened in a sentence. An
	// answer Parley refuses is an error whose text says why.
	Answer(ctx context.Context, id string, resp runner.Response) (string, error)
}

// Usage is the command's help.
const Usage = `Usage:
  parley asks [--user EMAIL]                  list the open asks you can answer, in every project
  parley asks answer ID [--user EMAIL] ANSWER answer one (ID: the id shown by "parley asks", or its start)

ANSWER, by the kind of ask:
  question    --choice LABEL (repeat for several), --text TEXT; for question N
              of a form write --choice N=LABEL, --text N=TEXT. --decline [--reason WHY]
  permission  --allow [--command CMD] (Bash: run CMD instead) [--input JSON] (any tool: run
              with this input instead), --always, --deny [--reason WHY]
  plan        --approve [--mode default|acceptEdits], --changes --reason WHAT

With --user (or PARLEY_USER) the command works on the server's database, found
as for "parley user" (--database-url, --data-dir); the answer reaches the
running server through it, so "parley serve" must be up. With PARLEY_TOKEN (an
API token, as for "parley mcp") and PARLEY_URL (default http://127.0.0.1:8080)
it goes through the server's MCP interface instead; --always and --input then
need the page.
`

// Run runs `parley asks` with args (what follows "asks") for c.
func Run(ctx context.Context, args []string, c Client, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "list" {
		list, err := c.Open(ctx)
		if err != nil {
			return err
		}
		return List(stdout, list)
	}
	if args[0] != "answer" {
		return fmt.Errorf("unknown asks command %q (want list or answer)", args[0])
	}
	if len(args) < 2 {
		return errors.New("asks answer needs the ID of an ask")
	}
	resp, err := ParseAnswer(args[2:])
	if err != nil {
		return err
	}
	id, err := resolveID(ctx, c, args[1])
	if err != nil {
		return err
	}
	msg, err := c.Answer(ctx, id, resp)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

// resolveID turns the start of an open ask's id into the whole id.
func resolveID(ctx context.Context, c Client, prefix string) (string, error) {
	if len(prefix) == 36 {
		return prefix, nil
	}
	if len(prefix) < 4 {
		return "", errors.New("give at least the first 4 characters of the ask's id")
	}
	list, err := c.Open(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, a := range list {
		if strings.HasPrefix(a.ID, strings.ToLower(prefix)) {
			found = append(found, a.ID)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("none of your open asks has an id starting with %s", prefix)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d open asks have an id starting with %s; give more of it", len(found), prefix)
}

// List writes the asks for people: each with its id, where and when it
// was asked, and what it asks.
func List(w io.Writer, list []Ask) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "Nothing is waiting for you.")
		return err
	}
	for _, a := range list {
		state := ""
		if a.Detached {
			state = " (its process has ended: an answer resumes the session)"
		}
		when := ""
		if !a.Asked.IsZero() {
			when = "  " + a.Asked.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "%s  %s  %s / %s%s%s\n", a.ID, a.Kind, a.Project, a.Session, when, state)
		for _, line := range describe(a.AskPayload) {
			fmt.Fprintln(w, "    "+line)
		}
	}
	return nil
}

// describe says what an ask asks, a line each.
func describe(p runner.AskPayload) []string {
	switch p.Kind {
	case runner.KindPermission:
		var in map[string]any
		_ = json.Unmarshal(p.Input, &in)
		if cmd, ok := in["command"].(string); ok && p.ToolName == "Bash" {
			return []string{"Claude wants to run: " + cmd}
		}
		return []string{"Claude wants to use " + p.ToolName + ": " + clip(string(p.Input), 300)}
	case runner.KindPlan:
		lines := []string{"Claude asks you to approve a plan:"}
		for l := range strings.Lines(clip(p.Plan, 2000)) {
			lines = append(lines, "  "+strings.TrimRight(l, "\n"))
		}
		return lines
	}
	f := p.TheForm()
	var lines []string
	if f.Title != "" {
		lines = append(lines, f.Title)
	}
	for i, q := range f.Questions {
		lines = append(lines, fmt.Sprintf("%d. %s%s", i+1, q.Question, choices(q)))
	}
	return lines
}

func choices(q askuser.Question) string {
	var labels []string
	for _, o := range q.Choices() {
		labels = append(labels, o.Label)
	}
	switch {
	case len(labels) == 0:
		return " (free text)"
	case q.Kind() == askuser.TypeMultiple:
		return " (any of: " + strings.Join(labels, ", ") + ")"
	}
	return " (one of: " + strings.Join(labels, ", ") + ")"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
