package runner

import (
	"os"
	"path/filepath"
	"testing"

	"parley/askuser"
)

func TestSweepRunFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := askuser.WriteConfig(dir, askuser.Config{URL: "http://127.0.0.1:1/ask", Token: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := askHTTPConfig(dir, "http://127.0.0.1:1/mcp-ask", "t"); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(keep, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := SweepRunFiles(dir)
	if err != nil || n != 2 {
		t.Fatalf("SweepRunFiles = %d, %v; want 2, nil", n, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 || left[0] != keep {
		t.Errorf("left %v, want only %s", left, keep)
	}
}
