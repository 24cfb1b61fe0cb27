package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
