package launch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteClaudeMDGivesTheDirsOwner: the CLAUDE.md Parley writes as root
// into a directory the project's uid owns is the uid's, not a root file
// in the runs' tree (which root would otherwise have to walk to give).
func TestWriteClaudeMDGivesTheDirsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid = 300011
	dir := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := writeClaudeMD(dir, "Be brief."); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, "CLAUDE.md"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Gid != uid || st.Mode&0o777 != 0o644 {
		t.Errorf("CLAUDE.md: %d:%d mode %o, want %d:%d 0644", st.Uid, st.Gid, st.Mode&0o777, uid, uid)
	}
}
