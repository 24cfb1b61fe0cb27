package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDenyFallocate: after the filter, fallocate --keep-size and a plain
// fallocate are refused in a child (EOPNOTSUPP) and take no block; a
// hole is still punched (blocks given back). The filter is set in a
// re-run of the test binary, since it cannot be dropped.
func TestDenyFallocate(t *testing.T) {
	if dir := os.Getenv("GUARD_TEST_FALLOCATE"); dir != "" {
		if err := denyFallocate(); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", `cd "$0" && touch kept && fallocate -n -l 100M kept; echo "rc=$?"; stat -c "blocks=%b" kept; `+
			`fallocate -l 1M plain; echo "plain=$?"; head -c 1048576 /dev/zero > holed && fallocate -p -o 0 -l 1M holed; echo "punch=$?"`, dir).CombinedOutput()
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestDenyFallocate$", "-test.v")
	cmd.Env = append(os.Environ(), "GUARD_TEST_FALLOCATE="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "blocks=0") || strings.Contains(string(out), "rc=0") || strings.Contains(string(out), "plain=0") ||
		!strings.Contains(string(out), "punch=0") {
		t.Errorf("with the filter:\n%s\nwant --keep-size and a plain fallocate refused, a hole punched", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "plain")); err == nil && fi.Size() != 0 {
		t.Errorf("the plain fallocate took %d bytes", fi.Size())
	}
}
