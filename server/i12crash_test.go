package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/runner/fakeapi"
)

// groupMembers lists the live (not zombie) processes whose process group is pgid.
func groupMembers(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

func TestReproI12(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{bashStep("touch y"),
		{Text: "got: " + fakeapi.ToolResultPlaceholder}}, envOptions{quiet: true})
	mode := os.Getenv("ISO")
	if mode == "uid" {
		os.Chmod(filepath.Dir(e.dataDir), 0o711)
	}
	a := e.startReplica("A", "PARLEY_ISOLATION="+mode)
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("go")
	e.waitInput(wa, s.ID)
	var pid int
	e.queryRow(`SELECT pid FROM runs WHERE session_id = $1`, []any{s.ID}, &pid)
	t.Logf("before: %q", groupMembers(pid))
	a.stop(syscall.SIGKILL)
	time.Sleep(5 * time.Second)
	t.Logf("after: %q", groupMembers(pid))
	t.Logf("requests: %d", len(e.fake.Requests()))
	for _, r := range e.fake.Requests() {
		t.Logf("req last: %.300s", r.LastUserText())
	}
	syscall.Kill(-pid, syscall.SIGKILL)
}

func TestReproTranscript(t *testing.T) {
	e := newEnv(t, fakeapi.Scenario{{Text: "Let me look.", ToolName: "Bash", ToolInput: map[string]any{"command": "echo hi", "description": "say hi"}},
		{Text: "All done here, a long reply in chunks.", Chunks: 5, ChunkDelay: 50 * time.Millisecond}}, envOptions{quiet: true})
	a := e.startReplica("A")
	s := e.newSession()
	wa := e.dialReplica(a, e.user, s.ID)
	wa.prompt("go")
	wa.waitFor(60*time.Second, "Done ·")
	a.stop(syscall.SIGTERM)
	out, err := exec.Command("cp", "-r", e.dataDir, "/tmp/i12exp/data").CombinedOutput()
	t.Log(string(out), err)
}
