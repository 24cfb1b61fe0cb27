package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"parley/asks"
	"parley/limit"
	"parley/runner"
	"parley/store"
)

// asksCmd is `parley asks`: list the open asks a person can answer, and
// answer one. It works on the server's database as the user --user names
// (env PARLEY_USER), or, with PARLEY_TOKEN (and PARLEY_URL), through the
// server's MCP interface as the token's user.
func asksCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, asks.Usage)
		return nil
	}
	fs, c := adminFlags("asks", getenv, stderr)
	user := fs.String("user", getenv("PARLEY_USER"), "email of the person answering (env PARLEY_USER)")
	fs.Usage = func() { fmt.Fprint(stderr, asks.Usage) }
	// The answer flags belong to asks.ParseAnswer: take only ours here.
	rest, err := takeFlags(fs, args, "user", "database-url", "data-dir")
	if err != nil {
		return err
	}
	if token := getenv("PARLEY_TOKEN"); token != "" && *user == "" {
		// Token mode: the same API token as Parley's MCP interface, over
		// the server's /mcp; no database access needed.
		client, err := asks.NewToken(ctx, orDefault(getenv("PARLEY_URL"), "http://127.0.0.1:8080"), token)
		if err != nil {
			return err
		}
		defer client.Close()
		return asks.Run(ctx, rest, sizeChecked{client}, stdout)
	}
	if *user == "" {
		fmt.Fprint(stderr, asks.Usage)
		return errors.New("asks needs --user EMAIL (or PARLEY_USER), or PARLEY_TOKEN: whose asks, and who answers")
	}
	return withStore(ctx, *c, stderr, func(st *store.Store) error {
		client, err := asks.NewDB(ctx, st, *user)
		if err != nil {
			return err
		}
		return asks.Run(ctx, rest, sizeChecked{client}, stdout)
	})
}

// sizeChecked refuses an answer over limit.TextBytes, the limit of a
// prompt and of an answer on every surface, before anything is sent, with
// the sentence the server and the page use.
type sizeChecked struct{ asks.Client }

// Answer implements asks.Client.
func (c sizeChecked) Answer(ctx context.Context, id string, resp runner.Response) (string, error) {
	if n := resp.TextBytes(); n > limit.TextBytes {
		return "", errors.New(limit.TooMuchText(n) + " Nothing was sent.")
	}
	return c.Client.Answer(ctx, id, resp)
}

// takeFlags parses the named flags (as --name VALUE or --name=VALUE) out of
// args with fs and returns the other arguments in order.
func takeFlags(fs interface {
	Set(name, value string) error
}, args []string, names ...string) ([]string, error) {
	ours := map[string]bool{}
	for _, n := range names {
		ours[n] = true
	}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := "", "", false
		if len(a) > 1 && a[0] == '-' {
			n := a[1:]
			if len(n) > 0 && n[0] == '-' {
				n = n[1:]
			}
			name, value, hasValue = cutEq(n)
		}
		if !ours[name] {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, fmt.Errorf("flag --%s: %w", name, err)
		}
	}
	return rest, nil
}

func cutEq(s string) (name, value string, ok bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
