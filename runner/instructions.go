package runner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// instructionsPrefix starts the name of every instructions file, so a
// sweep at start finds those a crash left (SweepRunFiles).
const instructionsPrefix = "instructions-"

// writeInstructions writes a run's appended system prompt (Spec.Instructions)
// to a new file in dir, mode 0600, and returns its path; "" when there is
// no text. The CLI reads it with --append-system-prompt-file: in argv the
// text would be readable by every process on the machine
// (/proc/<pid>/cmdline is world-readable), whereas the file is the run's
// uid's alone (the sandbox gives it to that uid, as the ask_user config).
// O_EXCL and O_NOFOLLOW: it never writes through a file or link someone
// else put there first.
func writeInstructions(dir, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	if dir == "" {
		dir = os.TempDir()
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	path := filepath.Join(dir, instructionsPrefix+hex.EncodeToString(suffix)+".md")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("write the run's instructions: %w", err)
	}
	_, err = f.WriteString(text)
	if err = errors.Join(err, f.Close()); err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("write the run's instructions: %w", err)
	}
	return path, nil
}
