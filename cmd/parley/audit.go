package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"parley/audit"
	"parley/store"
)

const auditUsage = `Usage:
  parley audit verify [--witness FILE]... [--head SEQ:HASH]...
                            check the audit trail's hash chain, and that each witness's head
                            is on it; prints "ok: N rows, head HASH", or the first broken row
                            or the rows removed from the end, and exits 1
                            Without --witness it reads DATA_DIR/audit-head, which "parley serve"
                            keeps; give every replica's file (copied here), and heads from
                            the log's "audit trail head" lines as SEQ:HASH
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
	var witnesses, heads repeated
	fs.Var(&witnesses, "witness", "a witness file of the chain's head (verify; repeatable)")
	fs.Var(&heads, "head", "a head SEQ:HASH noted elsewhere (verify; repeatable)")
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage) }
	if _, err := parseInterspersed(fs, args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "verify":
		hs, err := witnessHeads(witnesses, heads, c.DataDir)
		if err != nil {
			return err
		}
		return withStore(ctx, *c, stderr, func(st *store.Store) error { return auditVerify(ctx, st, hs, stdout) })
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

// auditVerify prints what Verify found; a broken chain, or one without a
// witness's head, is exit status 1.
func auditVerify(ctx context.Context, st *store.Store, heads []audit.Head, stdout io.Writer) error {
	res, err := audit.New(st).Verify(ctx, heads...)
	if err != nil {
		return err
	}
	switch {
	case res.BrokenID != 0:
		return fmt.Errorf("the audit trail is %s", res)
	case !res.OK():
		return fmt.Errorf("the audit trail was cut or rewritten: %s", res)
	}
	fmt.Fprintln(stdout, res)
	for _, h := range heads {
		fmt.Fprintf(stdout, "witness %s: seq %d is on the chain, which ends at seq %d\n", h.From, h.Seq, res.End)
	}
	if len(heads) == 0 {
		fmt.Fprintln(stdout, "no witness of the head was given: rows cut from the end would not show (--witness, --head)")
	}
	return nil
}

// witnessHeads reads the heads verify checks: the witness files and heads
// given, else the data directory's witness file when there is one.
func witnessHeads(files, given []string, dataDir string) ([]audit.Head, error) {
	if len(files) == 0 {
		def := filepath.Join(dataDir, audit.WitnessFile)
		if _, err := os.Stat(def); err == nil {
			files = []string{def}
		}
	}
	var hs []audit.Head
	for _, f := range files {
		h, err := audit.ReadWitness(f)
		if err != nil {
			return nil, err
		}
		if h.Seq > 0 {
			hs = append(hs, h)
		}
	}
	for _, g := range given {
		h, err := audit.ParseHead(g)
		if err != nil {
			return nil, err
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

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
