// Command parley is a team web chat for the Claude Code CLI.
//
//	parley serve            run the web server (applies migrations first)
//	parley migrate          apply pending database migrations and exit
//	parley user             add, list, re-password and remove accounts
//	parley project          add and list projects
//	parley token            add, list and revoke API tokens
//	parley sync-workspaces  regenerate every project's workspace files
//	parley mcp              Parley's MCP tools over stdio, relayed to a server
//	parley asks             list and answer open asks from a terminal
//	parley audit            verify and export the audit trail
//	parley fake-model       a scripted fake Anthropic API, to try Parley without a key
//	parley mcp-askuser      the ask_user MCP server Claude spawns (not for people)
//	parley run-guard        starts a run's claude confined, so it never outlives Parley (not for people)
//	parley sandbox-relay    a run's first process in bubblewrap: its way to the gateway (not for people)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"parley/sandbox"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	var code exitStatus
	if errors.As(err, &code) {
		os.Exit(int(code))
	}
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}

const usage = `Parley: a team web chat for the Claude Code CLI.

Usage:
  parley serve [flags]        run the web server (applies migrations first); "serve -h" lists
                              every flag and environment variable
  parley migrate [flags]      apply pending database migrations and exit
  parley user add EMAIL [--admin] [--name NAME]
                              create an account (password from stdin or typed twice)
  parley user list|passwd EMAIL|remove EMAIL
                              list accounts, set a password (ends its sign-ins), delete an account
  parley project add NAME --owner EMAIL
                              create a project owned by EMAIL; "project list" lists them
  parley token add EMAIL [--name NAME] | list | revoke ID
                              API tokens for the MCP endpoint and "parley asks"
  parley audit verify | export [--project ID] [--since TIME]
                              check the audit trail's hash chain; write it as JSON lines
  parley sync-workspaces      regenerate every project's CLAUDE.md and .claude/settings.local.json
  parley mcp                  Parley's MCP tools over stdio, relayed to a server (PARLEY_URL, PARLEY_TOKEN)
  parley asks [--user EMAIL]  list the open asks you can answer; "asks answer ID ..." answers one
  parley fake-model [--addr ADDR]
                              serve a scripted fake Anthropic Messages API (demo, no key needed)

Started by Parley itself, not for people:
  parley mcp-askuser          the ask_user MCP server that Claude spawns (reads ASK_USER_CONFIG)
  parley run-guard [--nice N] [--cgroup DIR]... [--pid-ns] [--uid U --gid G] [--oom-score N] [--max-file BYTES] -- CMD...
                              starts a run's claude in its cgroup, pid namespace and uid; ends it if Parley dies
  parley sandbox-relay [--forward ADDR=SOCKET]... -- CMD...
                              a run's first process in bubblewrap: relays its loopback ports to the gateway socket

Run "parley <command> -h" for a command's flags; docs/configuration.md lists every variable.
`

// run is main without the process: tests call it too.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "migrate":
		return migrate(ctx, args[1:], getenv, stdout, stderr)
	case "mcp-askuser":
		return mcpAskUser(ctx, getenv, stdin, stdout)
	case "run-guard":
		return runGuard(args[1:])
	case sandbox.RelayCommand:
		return sandboxRelay(args[1:])
	case "fake-model":
		return fakeModel(ctx, args[1:], stderr)
	case "user":
		return userCmd(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "project":
		return projectCmd(ctx, args[1:], getenv, stdout, stderr)
	case "token":
		return tokenCmd(ctx, args[1:], getenv, stdout, stderr)
	case "mcp":
		return mcpCmd(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "asks":
		return asksCmd(ctx, args[1:], getenv, stdout, stderr)
	case "audit":
		return auditCmd(ctx, args[1:], getenv, stdout, stderr)
	case "sync-workspaces":
		return syncWorkspaces(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
