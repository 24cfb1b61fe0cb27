package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/google/uuid"
)

// maxTranscriptLine bounds one transcript line read for a tool result (a
// result may be hundreds of KB); a longer line is skipped.
const maxTranscriptLine = 16 << 20

// transcriptHasResult reports whether the CLI's saved conversation
// ($CLAUDE_CONFIG_DIR/projects/<cwd>/<session id>.jsonl, shared/claude-cli.md)
// holds the result of the ask's tool call: then the model has the answer
// and a resumed process must not be sent it again. A result that is an
// error of ask_user (the relay broke) did not carry the answer.
func transcriptHasResult(configDir, claudeSessionID string, p AskPayload) bool {
	if configDir == "" || p.ToolUseID == "" || uuid.Validate(claudeSessionID) != nil {
		return false
	}
	f, err := openTranscript(configDir, claudeSessionID)
	if err != nil {
		return false
	}
	defer f.Close()
	return hasResult(bufio.NewReader(f), []byte(p.ToolUseID), p.Source == SourceAskUser)
}

// openTranscript opens the session's transcript as hostile input (the run's
// own uid writes it): resolved inside configDir (os.Root), never through a
// symlink, and a FIFO or device is refused without blocking.
func openTranscript(configDir, id string) (*os.File, error) {
	root, err := os.OpenRoot(configDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	matches, err := fs.Glob(root.FS(), path.Join("projects", "*", id+".jsonl"))
	if err != nil || len(matches) == 0 {
		return nil, fs.ErrNotExist
	}
	f, err := root.OpenFile(filepath.FromSlash(matches[0]), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("transcript is not a regular file")
	}
	return f, nil
}

// hasResult scans a transcript for a tool_result block of tool_use id;
// errorsDontCount skips results marked is_error.
func hasResult(br *bufio.Reader, id []byte, errorsDontCount bool) bool {
	for {
		line, err := boundedLine(br)
		if bytes.Contains(line, id) && lineHasResult(line, string(id), errorsDontCount) {
			return true
		}
		if err != nil && !errors.Is(err, errLongLine) {
			return false
		}
	}
}

var errLongLine = errors.New("transcript line too long")

// boundedLine returns the next line, or errLongLine once a line longer
// than maxTranscriptLine has been skipped. Lines exceed 64 KiB
// (shared/claude-cli.md), so whole lines are read, up to the bound.
func boundedLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxTranscriptLine {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return nil, err
			}
			return nil, errLongLine
		}
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err // nil, io.EOF or a read error: the caller stops on any but errLongLine
		}
	}
}

func lineHasResult(line []byte, id string, errorsDontCount bool) bool {
	var u toolResults
	if json.Unmarshal(line, &u) != nil {
		return false
	}
	for _, b := range u.Message.Content {
		if b.Type == "tool_result" && b.ToolUseID == id && !(errorsDontCount && b.IsError) {
			return true
		}
	}
	return false
}
