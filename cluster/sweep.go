package cluster

import (
	"os"
	"path/filepath"

	"parley/runner"
)

// sweepLapsed removes the run files (ask_user token configs, --mcp-config
// files) of replicas whose lease lapsed: their runs are gone and their
// tokens dead. A replica killed and restarted at once finds its previous
// self still live and leaves its files alone; they go here, as soon as its
// row lapses. Only the files (its lock file among them) go, never the directory, and none while the
// replica's process still holds the directory's lock: a replica that lapsed
// while alive (a database outage) still uses its runs' files there.
func (n *Node) sweepLapsed(dead []string) {
	if n.cfg.RuntimeBase == "" {
		return
	}
	for _, id := range dead {
		if id == n.id || id == "" || filepath.Base(id) != id {
			continue
		}
		dir := filepath.Join(n.cfg.RuntimeBase, id)
		f, held := lockOf(dir)
		if held {
			continue // its process lives (its lease lapsed in a database outage): its runs' files are in use
		}
		k, err := runner.SweepRunFiles(dir)
		if f != nil {
			// The lock file goes too (its lock is ours now): nothing of the
			// stopped replica is left in the directory.
			if rerr := os.Remove(filepath.Join(dir, lockName)); rerr == nil {
				k++
			}
			f.Close()
		}
		if err != nil {
			n.Log.Warn("sweep the run files of a stopped replica", "replica", id, "err", err)
		}
		if k > 0 {
			n.Log.Info("removed the run files of a stopped replica", "replica", id, "files", k)
		}
	}
}
