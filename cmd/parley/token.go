package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"parley/audit"
	"parley/mcpapi"
	"parley/server"
	"parley/store"
)

const tokenUsage = `Usage:
  parley token add EMAIL [--name NAME]   make an API token for the user; the token alone is the last line
  parley token list                      list every token (never the tokens themselves)
  parley token revoke ID                 revoke a token at once

A token acts as its user, with the user's roles, on Parley's MCP endpoint
(/mcp, "Authorization: Bearer TOKEN") and through "parley mcp". Users make
and revoke their own on the /tokens page. These take --database-url and
--data-dir like "parley user".
`

// tokenCmd manages API tokens.
func tokenCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, tokenUsage)
		if len(args) == 0 {
			return errors.New("no token command given")
		}
		return nil
	}
	fs, c := adminFlags("token "+args[0], getenv, stderr)
	name := fs.String("name", "", "the token's name (token add); empty = \"cli\"")
	fs.Usage = func() { fmt.Fprint(stderr, tokenUsage) }
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	switch {
	case args[0] == "list" && len(pos) == 0:
		return withStore(ctx, *c, stderr, func(st *store.Store) error { return listTokens(ctx, st, stdout) })
	case args[0] == "add" && len(pos) == 1:
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			u, err := findUser(ctx, st, strings.TrimSpace(pos[0]))
			if err != nil {
				return err
			}
			n := strings.TrimSpace(*name)
			if n == "" {
				n = "cli"
			}
			token, hash := server.NewAPIToken()
			t, err := st.CreateAPIToken(ctx, u.ID, n, hash)
			if err != nil {
				return err
			}
			recordCLI(ctx, st, getenv, stderr, audit.Entry{Action: audit.TokenCreate, Target: t.Name, Detail: map[string]any{"token_id": t.ID, "user_id": u.ID}})
			fmt.Fprintf(stdout, "created token %d %q for %s; it is shown only this once:\n%s\n", t.ID, t.Name, u.Email, token)
			return nil
		})
	case args[0] == "revoke" && len(pos) == 1:
		id, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a token id (see parley token list)", pos[0])
		}
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			if err := st.RevokeAPIToken(ctx, id, 0); errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("there is no live token %d", id)
			} else if err != nil {
				return err
			}
			recordCLI(ctx, st, getenv, stderr, audit.Entry{Action: audit.TokenRevoke, Target: pos[0], Detail: map[string]any{"token_id": id}})
			fmt.Fprintf(stdout, "revoked token %d\n", id)
			return nil
		})
	}
	fmt.Fprint(stderr, tokenUsage)
	return fmt.Errorf("token %s: wrong arguments", args[0])
}

func listTokens(ctx context.Context, st *store.Store, stdout io.Writer) error {
	list, err := st.AllAPITokens(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tNAME\tCREATED\tLAST USED\tREVOKED")
	for _, t := range list {
		used, revoked := "never", ""
		if t.LastUsedAt != nil {
			used = t.LastUsedAt.Format("2006-01-02 15:04")
		}
		if t.RevokedAt != nil {
			revoked = t.RevokedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Email, t.Name, t.CreatedAt.Format("2006-01-02 15:04"), used, revoked)
	}
	return tw.Flush()
}

const mcpUsage = `Usage: parley mcp

Serves Parley's MCP tools over stdio for a local MCP client, relaying to a
running Parley server. Environment:
  PARLEY_URL    the server, e.g. http://127.0.0.1:8080 (default)
  PARLEY_TOKEN  an API token (the /tokens page, or parley token add)

For example: claude mcp add parley -e PARLEY_TOKEN=... -- parley mcp
`

// mcpCmd is `parley mcp`: Parley's MCP server over stdio.
func mcpCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.ReadCloser, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprint(stderr, mcpUsage)
		if isHelp(args[0]) {
			return nil
		}
		return errors.New("parley mcp takes no arguments")
	}
	token := getenv("PARLEY_TOKEN")
	if token == "" {
		fmt.Fprint(stderr, mcpUsage)
		return errors.New("PARLEY_TOKEN is not set")
	}
	base := strings.TrimSuffix(orDefault(getenv("PARLEY_URL"), "http://127.0.0.1:8080"), "/")
	return mcpapi.Proxy(ctx, base+"/mcp", token, stdin, nopWriteCloser{stdout})
}
