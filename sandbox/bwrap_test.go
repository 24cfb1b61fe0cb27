package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parley/runner"
)

func TestBubblewrap(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("PARLEY_REQUIRE_ALL") == "1" {
			t.Fatal("bwrap not installed (scripts/install-test-deps.sh installs it)")
		}
		t.Skip("bwrap not installed")
	}
	data := t.TempDir()
	other := filepath.Join(data, "projects", "2", "workspace")
	ws := filepath.Join(data, "projects", "1", "workspace")
	for _, d := range []string{other, ws} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(other, "secret"), []byte("B-SECRET"), 0o644)
	bw, err := NewBubblewrap(t.Context(), []string{data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "echo mine > mine; cat "+filepath.Join(other, "secret")+"; pwd; ls /proc | grep -c '^[0-9]'")
	cmd.Dir = ws
	if err := bw.Confine(cmd, runner.Spec{Workspace: ws}); err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	got := string(out)
	if strings.Contains(got, "B-SECRET") || !strings.Contains(got, "No such file") {
		t.Errorf("another project's file was readable:\n%s", got)
	}
	if !strings.Contains(got, ws+"\n") {
		t.Errorf("the run does not start in its workspace:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "mine")); err != nil || string(b) != "mine\n" {
		t.Errorf("the workspace is not writable: %q, %v\n%s", b, err, got)
	}
}
