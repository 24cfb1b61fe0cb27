package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"parley/runner/fakeapi"
)

// TestAppendSystemPromptFile measures what the runs rely on: the pinned
// CLI reads --append-system-prompt-file and the file's text reaches the
// model request's system prompt, while the text is in none of the
// CLI's arguments.
func TestAppendSystemPromptFile(t *testing.T) {
	bin := fakeapi.ClaudeBin(t)
	s := fakeapi.Serve(t, fakeapi.Scenario{{Text: "ok"}})
	const text = "FILE-INSTRUCTIONS-MARKER: answer in French."
	path, err := writeInstructions(t.TempDir(), text)
	if err != nil {
		t.Fatal(err)
	}
	args, err := Config{}.args(Spec{ClaudeSessionID: "5c0d5c0d-0000-4000-8000-000000000001", Instructions: text, InstructionsPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "FILE-INSTRUCTIONS") }) {
		t.Fatalf("the instructions are in argv: %q", args)
	}
	if !slices.Contains(args, path) {
		t.Fatalf("args lack the instructions file: %q", args)
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, "-p", "--output-format", "stream-json", "--verbose",
		"--setting-sources", "", "--append-system-prompt-file", path, "hi")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.Env(dir)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	if !strings.Contains(reqs[0].System, text) {
		t.Errorf("the system prompt lacks the file's text:\n%.3000s", reqs[0].System)
	}
}

// TestWriteInstructions: the file is the owner's alone, holds the text,
// is never written through something already at its name, and no text
// means no file.
func TestWriteInstructions(t *testing.T) {
	dir := t.TempDir()
	path, err := writeInstructions(dir, "be brief")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode(); got != 0o600 {
		t.Errorf("mode %v, want -rw-------", got)
	}
	if b, _ := os.ReadFile(path); string(b) != "be brief" {
		t.Errorf("file holds %q", b)
	}
	if !strings.HasPrefix(filepath.Base(path), instructionsPrefix) {
		t.Errorf("name %s lacks the sweep's prefix", path)
	}
	if n, err := SweepRunFiles(dir); err != nil || n != 1 {
		t.Errorf("SweepRunFiles = %d, %v; want the instructions file swept", n, err)
	}
	if p, err := writeInstructions(dir, ""); p != "" || err != nil {
		t.Errorf("no text: %q, %v; want no file", p, err)
	}
}

// TestRunInstructionsFile: a run's instructions reach its model through a
// 0600 file that is in no argument of the CLI, and the file is gone once
// the run ends.
func TestRunInstructionsFile(t *testing.T) {
	fake := fakeapi.Serve(t, fakeapi.Scenario{{Text: "hi"}})
	sup, _, pub := newTestSupervisor(t, fakeapi.ClaudeBin(t), fake.Env(t.TempDir()))
	o := testOptions(t, "")
	o.Instructions = "RUN-INSTRUCTIONS-MARKER"
	if err := sup.Prompt(t.Context(), "s1", With(o), "hello", Author{Name: "you"}); err != nil {
		t.Fatal(err)
	}
	waitType(t, pub, "result")
	r, ok := sup.Live("s1")
	if !ok {
		t.Fatal("no live run")
	}
	path := r.spec.InstructionsPath
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("instructions file %q: %v; want mode 0600", path, err)
	}
	if argv, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r.Pid()), "cmdline")); strings.Contains(string(argv), "RUN-INSTRUCTIONS") {
		t.Errorf("the CLI's arguments hold the instructions: %q", argv)
	}
	if sys := fake.Requests()[0].System; !strings.Contains(sys, "RUN-INSTRUCTIONS-MARKER") {
		t.Errorf("the model's system prompt lacks the instructions")
	}
	sup.Shutdown()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the instructions file is still there after the run ended: %v", err)
	}
}
