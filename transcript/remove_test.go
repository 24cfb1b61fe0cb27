package transcript

import (
	"os"
	"path/filepath"
	"testing"
)

// Remove deletes a conversation's transcript, its folder and file
// history, and nothing of another's; the config dir is the runs' to
// write, so a link they planted is removed, never followed: neither a
// linked projects folder nor a transcript that is a link reaches the
// files outside.
func TestRemoveDoesNotFollowLinks(t *testing.T) {
	const id, other = "11111111-2222-3333-4444-555555555555", "99999999-2222-3333-4444-555555555555"
	cfg, outside := t.TempDir(), t.TempDir()
	write := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cfg, "projects", "-work", id+".jsonl"))
	write(filepath.Join(cfg, "projects", "-work", id, "subagents", "a.jsonl"))
	write(filepath.Join(cfg, "file-history", id, "f"))
	write(filepath.Join(cfg, "projects", "-work", other+".jsonl"))
	// Planted: a projects folder linking outside, and a transcript that
	// is a link to a file outside.
	write(filepath.Join(outside, id+".jsonl"))
	write(filepath.Join(outside, "precious"))
	if err := os.Symlink(outside, filepath.Join(cfg, "projects", "-evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(cfg, "projects", "-link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "precious"), filepath.Join(cfg, "projects", "-link", id+".jsonl")); err != nil {
		t.Fatal(err)
	}

	n, err := Remove(cfg, id)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("removed %d, want 4 (the transcript, its folder, its file history, the planted link)", n)
	}
	for _, gone := range []string{"projects/-work/" + id + ".jsonl", "projects/-work/" + id, "file-history/" + id, "projects/-link/" + id + ".jsonl"} {
		if _, err := os.Lstat(filepath.Join(cfg, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	for _, kept := range []string{filepath.Join(cfg, "projects", "-work", other+".jsonl"), filepath.Join(outside, id+".jsonl"), filepath.Join(outside, "precious")} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
	if n, err := Remove(cfg, id); n != 0 || err != nil {
		t.Errorf("a second Remove: %d, %v; want nothing", n, err)
	}
	if _, err := Remove(cfg, "../../etc"); err == nil {
		t.Error("a session id that is a path was accepted")
	}
}
