package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDenyKeepSizeFallocate: after the filter, fallocate --keep-size is
// refused in a child (EOPNOTSUPP) and takes no block; a plain fallocate
// still works. The filter is set in a re-run of the test binary, since
// it cannot be dropped.
func TestDenyKeepSizeFallocate(t *testing.T) {
	if dir := os.Getenv("GUARD_TEST_FALLOCATE"); dir != "" {
		if err := denyKeepSizeFallocate(); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", `cd "$0" && touch kept && fallocate -n -l 100M kept; echo "rc=$?"; stat -c "blocks=%b" kept; `+
			`fallocate -l 1M plain; echo "plain=$?"`, dir).CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(out)
		return
	}
	if _, err := exec.LookPath("fallocate"); err != nil {
		t.Skip("no fallocate")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDenyKeepSizeFallocate$", "-test.v")
	cmd.Env = append(os.Environ(), "GUARD_TEST_FALLOCATE="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "blocks=0") || strings.Contains(string(out), "rc=0") || !strings.Contains(string(out), "plain=0") {
		t.Errorf("with the filter:\n%s\nwant --keep-size refused and a plain fallocate done", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "plain")); err != nil || fi.Size() != 1<<20 {
		t.Errorf("the plain fallocate: %v", err)
	}
}
