package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"

	"golang.org/x/term"

	"parley/audit"
	"parley/cluster"
	"parley/server"
	"parley/store"
)

const userUsage = `Usage:
  parley user add EMAIL [--admin] [--name NAME]   create an account
  parley user list                                list the accounts
  parley user passwd EMAIL                        set a new password (ends the user's sign-ins)
  parley user remove EMAIL                        delete an account (ends its sign-ins and memberships)

The password is read from standard input: typed twice, without echo, when it
is a terminal; else its first line (for scripts: echo "$PW" | parley user add ...).
Passwords are 8 to 72 bytes.

Every subcommand takes --database-url and --data-dir (env DATABASE_URL,
PARLEY_DATA_DIR) to find the database as "parley serve" does; with the
private PostgreSQL it connects to the one a running server started.
`

// userCmd manages accounts.
func userCmd(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, userUsage)
		if len(args) == 0 {
			return errors.New("no user command given")
		}
		return nil
	}
	fs, c := adminFlags("user "+args[0], getenv, stderr)
	admin := fs.Bool("admin", false, "make the account an admin (user add)")
	name := fs.String("name", "", "the name shown to others; empty = the email (user add)")
	fs.Usage = func() { fmt.Fprint(stderr, userUsage) }
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	if args[0] == "list" {
		return withStore(ctx, *c, stderr, func(st *store.Store) error { return listUsers(ctx, st, stdout) })
	}
	if len(pos) != 1 {
		fmt.Fprint(stderr, userUsage)
		return fmt.Errorf("user %s takes one EMAIL", args[0])
	}
	email := strings.TrimSpace(pos[0])
	switch args[0] {
	case "add":
		if !strings.Contains(email, "@") || strings.ContainsAny(email, " \t\r\n") {
			return fmt.Errorf("%q is not an email address", email)
		}
		hash, err := readPassword(stdin, stderr)
		if err != nil {
			return err
		}
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			u, err := st.CreateUser(ctx, email, strings.TrimSpace(*name), hash, *admin)
			if errors.Is(err, store.ErrExists) {
				return fmt.Errorf("a user with the email %s already exists", email)
			}
			if err != nil {
				return err
			}
			kind := "user"
			if u.IsAdmin {
				kind = "admin"
			}
			recordCLI(ctx, st, getenv, stderr, audit.Entry{Action: audit.UserAdd, Target: u.Email, Detail: map[string]any{"user_id": u.ID, "admin": u.IsAdmin}})
			fmt.Fprintf(stdout, "created %s %s\n", kind, u.Email)
			return nil
		})
	case "passwd":
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			u, err := findUser(ctx, st, email)
			if err != nil {
				return err
			}
			hash, err := readPassword(stdin, stderr)
			if err != nil {
				return err
			}
			if err := st.SetPassword(ctx, u.ID, hash); err != nil {
				return err
			}
			recordCLI(ctx, st, getenv, stderr, audit.Entry{Action: audit.PasswordSet, Target: u.Email, Detail: map[string]any{"user_id": u.ID}})
			fmt.Fprintf(stdout, "password of %s changed; their sign-ins have ended\n", u.Email)
			return nil
		})
	case "remove":
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			u, err := findUser(ctx, st, email)
			if err != nil {
				return err
			}
			if err := st.DeleteUser(ctx, u.ID); err != nil {
				return err
			}
			// Running replicas close the user's pages and stop their turns now.
			if err := cluster.SignalAccessChanged(ctx, st); err != nil {
				fmt.Fprintf(stderr, "warning: running Parley servers were not told at once: %v\n", err)
			}
			recordCLI(ctx, st, getenv, stderr, audit.Entry{Action: audit.UserRemove, Target: u.Email, Detail: map[string]any{"user_id": u.ID}})
			fmt.Fprintf(stdout, "removed %s\n", u.Email)
			return nil
		})
	}
	fmt.Fprint(stderr, userUsage)
	return fmt.Errorf("unknown user command %q", args[0])
}

func listUsers(ctx context.Context, st *store.Store, stdout io.Writer) error {
	users, err := st.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tNAME\tADMIN\tCREATED")
	for _, u := range users {
		admin := "no"
		if u.IsAdmin {
			admin = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Email, u.Name, admin, u.CreatedAt.Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func findUser(ctx context.Context, st *store.Store, email string) (store.User, error) {
	u, err := st.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return u, fmt.Errorf("there is no user with the email %s", email)
	}
	return u, err
}

// readPassword reads a new password and returns its hash: typed twice
// without echo on a terminal, else the first line of stdin.
func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	var pw string
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "Password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		fmt.Fprint(stderr, "Again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		if string(a) != string(b) {
			return "", errors.New("the two passwords differ")
		}
		pw = string(a)
	} else {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password from stdin: %w", err)
		}
		pw = strings.TrimRight(line, "\r\n")
	}
	hash, err := server.HashPassword(pw)
	if err != nil {
		return "", err
	}
	return hash, nil
}

// adminFlags is the flag set of an admin subcommand: where the database is.
func adminFlags(name string, getenv func(string) string, stderr io.Writer) (*flag.FlagSet, *config) {
	c, _ := parseConfig(name, nil, getenv, io.Discard)
	fs := flag.NewFlagSet("parley "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(dbURLFlag{&c.DatabaseURL, &c.dbURLPassword}, "database-url", "PostgreSQL URL (env DATABASE_URL; a password belongs there, not here); empty = the private PostgreSQL under the data directory")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "Parley's data directory (env PARLEY_DATA_DIR)")
	return fs, &c
}

// parseInterspersed parses flags placed before, between or after the
// positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// withStore opens the database for an admin subcommand, applies pending
// migrations and runs f. With no DATABASE_URL it uses the private cluster a
// running server started, or starts it for the command.
func withStore(ctx context.Context, c config, stderr io.Writer, f func(*store.Store) error) error {
	st, closeStore, err := openStore(ctx, c, newLogger(stderr, "warn"), true)
	if err != nil {
		return err
	}
	defer closeStore()
	defer witnessCLI(st, c.DataDir, stderr)()
	return f(st)
}

// witnessCLI appends the head of the audit rows an admin command records
// to the witness of the server whose data directory it names, if that
// server keeps one there (docs/audit.md). The function it returns writes
// the newest; run it once the command is done.
func witnessCLI(st *store.Store, dataDir string, stderr io.Writer) func() {
	path := filepath.Join(dataDir, audit.WitnessFile)
	if _, err := os.Stat(path); err != nil {
		return func() {} // no server's witness here: another host, or none started
	}
	var mu sync.Mutex
	var newest audit.Row
	st.OnAuditAppend(func(r audit.Row) {
		mu.Lock()
		defer mu.Unlock()
		if r.ID > newest.ID {
			newest = r
		}
	})
	return func() {
		st.OnAuditAppend(nil)
		mu.Lock()
		defer mu.Unlock()
		if newest.ID == 0 {
			return
		}
		if err := audit.AppendWitness(path, audit.Head{Seq: newest.ID, Hash: newest.Hash}); err != nil {
			fmt.Fprintf(stderr, "warning: the audit witness was not written: %v\n", err)
		}
	}
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "help" }

// firstAdminHint logs how to create the first account when there is none.
func firstAdminHint(ctx context.Context, st *store.Store, c config, log *slog.Logger) error {
	n, err := st.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	cmd := "parley user add you@example.com --admin --data-dir " + shellQuote(c.DataDir)
	if c.DatabaseURL != "" {
		cmd = "parley user add you@example.com --admin (with this server's DATABASE_URL in the environment)"
	}
	log.Warn("no user exists yet: create the first admin with `" + cmd + "` (it asks for the password), then sign in at http://" + c.Addr + "/login")
	return nil
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
