package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"parley/launch"
	"parley/store"
)

// syncWorkspaces regenerates every project's workspace files (CLAUDE.md)
// and directories, after an upgrade changed
// how they are written. A project whose files cannot be written is
// reported and the others still synced.
func syncWorkspaces(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs, c := adminFlags("sync-workspaces", getenv, stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return withStore(ctx, *c, stderr, func(st *store.Store) error {
		list, err := st.ListProjects(ctx)
		if err != nil {
			return err
		}
		var errs []error
		for _, p := range list {
			dir, err := launch.SyncWorkspace(c.DataDir, p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(stdout, "project %d %q: %s\n", p.ID, p.Name, dir)
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "synced %d projects\n", len(list))
		return nil
	})
}
