package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"parley/audit"
	"parley/store"
)

const auditUsage = `Usage:
  parley audit verify       check the audit trail's hash chain; prints "ok: N rows, head HASH"
                            or the first broken row, and exits 1 when the chain is broken
  parley audit export [--project ID] [--since TIME] [--until TIME] [--action ACTION]
                            write the trail as JSON lines, oldest first

TIME is YYYY-MM-DD (UTC) or RFC 3339. Both take --database-url and --data-dir
(env DATABASE_URL, PARLEY_DATA_DIR) as "parley user" does.
`

// auditCmd verifies and exports the audit trail.
func auditCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, auditUsage)
		if len(args) == 0 {
			return errors.New("no audit command given")
		}
		return nil
	}
	fs, c := adminFlags("audit "+args[0], getenv, stderr)
	project := fs.Int64("project", 0, "only this project's rows (export)")
	since := fs.String("since", "", "only rows at or after this time (export)")
	until := fs.String("until", "", "only rows before this time (export)")
	action := fs.String("action", "", "only rows of this action (export)")
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage) }
	if _, err := parseInterspersed(fs, args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "verify":
		return withStore(ctx, *c, stderr, func(st *store.Store) error { return auditVerify(ctx, st, stdout) })
	case "export":
		f := audit.Filter{ProjectID: *project, Action: *action}
		var err error
		if f.Since, err = parseTime(*since); err != nil {
			return err
		}
		if f.Until, err = parseTime(*until); err != nil {
			return err
		}
		return withStore(ctx, *c, stderr, func(st *store.Store) error { return audit.New(st).Export(ctx, f, stdout) })
	}
	fmt.Fprint(stderr, auditUsage)
	return fmt.Errorf("unknown audit command %q", args[0])
}

// auditVerify prints what Verify found; a broken chain is exit status 1.
func auditVerify(ctx context.Context, st *store.Store, stdout io.Writer) error {
	res, err := audit.New(st).Verify(ctx)
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("the audit trail is %s", res)
	}
	fmt.Fprintln(stdout, res)
	return nil
}

// recordCLI records an admin command's action in the audit trail: the
// surface cli, the OS user who ran it and this host. A failure is a
// warning; the command's work is done already.
func recordCLI(ctx context.Context, st *store.Store, getenv func(string) string, stderr io.Writer, e audit.Entry) {
	host, _ := os.Hostname()
	e.Surface, e.ActorName, e.From = audit.CLI, "shell user "+getenv("USER"), host
	if err := audit.New(st).Record(ctx, e); err != nil {
		fmt.Fprintf(stderr, "warning: not recorded in the audit trail: %v\n", err)
	}
}

// parseTime reads YYYY-MM-DD (UTC) or RFC 3339; empty is the zero time.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, fmt.Errorf("%q is not a time: give YYYY-MM-DD or RFC 3339 (2026-11-27T08:00:00Z)", s)
	}
	return t, nil
}
