package slash

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWalkIsBounded: the commands folder is the runs' to write, and
// anyone who may view a session (a viewer too) lists it with GET
// /sessions/{id}/commands. The attack: a run plants folders of empty
// folders, 200 wide and 3 deep, holding no command, so that the walk
// never reaches maxCommands and opens every one at every request (200 x
// 200 of them took 2.7 s a listing here). The walk looks at no more than
// maxVisits entries in all.
func TestWalkIsBounded(t *testing.T) {
	ws := t.TempDir()
	c := filepath.Join(ws, commandsDir)
	for i := range 40 {
		for j := range 40 {
			if err := os.MkdirAll(filepath.Join(c, fmt.Sprint("a", i), fmt.Sprint("b", j)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(c, "deploy.md"), []byte("Deploy it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := &walker{root: root}
	w.walk(commandsDir, "", 0)
	if w.seen > maxVisits {
		t.Errorf("the walk looked at %d entries; the bound is %d", w.seen, maxVisits)
	}
}
