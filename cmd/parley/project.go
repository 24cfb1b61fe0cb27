package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"parley/launch"
	"parley/store"
)

const projectUsage = `Usage:
  parley project add NAME --owner EMAIL   create a project owned by EMAIL, with its managed workspace
  parley project list                     list the projects

Both take --database-url and --data-dir, like "parley user".
`

// projectCmd manages projects from scripts.
func projectCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, projectUsage)
		if len(args) == 0 {
			return errors.New("no project command given")
		}
		return nil
	}
	fs, c := adminFlags("project "+args[0], getenv, stderr)
	owner := fs.String("owner", "", "email of the project's owner (project add)")
	fs.Usage = func() { fmt.Fprint(stderr, projectUsage) }
	pos, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return err
	}
	switch args[0] {
	case "list":
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			list, err := st.ListProjects(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tWORKSPACE\tARCHIVED")
			for _, p := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%v\n", p.ID, p.Name, launch.WorkspaceDir(c.DataDir, p), p.ArchivedAt != nil)
			}
			return tw.Flush()
		})
	case "add":
		name := strings.TrimSpace(strings.Join(pos, " "))
		if name == "" || *owner == "" {
			fmt.Fprint(stderr, projectUsage)
			return errors.New("project add needs a NAME and --owner EMAIL")
		}
		return withStore(ctx, *c, stderr, func(st *store.Store) error {
			u, err := findUser(ctx, st, *owner)
			if err != nil {
				return err
			}
			p, err := st.CreateProject(ctx, name, u.ID)
			if err != nil {
				return err
			}
			dir, err := launch.SyncWorkspace(c.DataDir, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created project %d %q owned by %s; workspace %s\n", p.ID, p.Name, u.Email, dir)
			return nil
		})
	}
	fmt.Fprint(stderr, projectUsage)
	return fmt.Errorf("unknown project command %q", args[0])
}
