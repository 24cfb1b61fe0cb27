package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"

	"parley/safefile"
)

// Entry is one line of the CLI's transcript
// ($CLAUDE_CONFIG_DIR/projects/<cwd with "/"→"-">/<session_id>.jsonl),
// as far as Parley reads it. Its user and assistant entries hold the same
// message as the matching stdout line, with the line's uuid; a subagent's
// entries are marked isSidechain, the CLI's own bookkeeping lines (command
// output, caveats) isMeta, and a tool result's raw value is in
// toolUseResult. The file is written by the run's own uid: read it as
// hostile input, a bounded line at a time.
type Entry struct {
	Type          string          `json:"type"`
	UUID          string          `json:"uuid"`
	IsSidechain   bool            `json:"isSidechain"`
	IsMeta        bool            `json:"isMeta"`
	Message       json.RawMessage `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
}

// MaxTranscriptLine bounds one transcript line (a tool result may be
// hundreds of KB); a longer line is skipped.
const MaxTranscriptLine = 16 << 20

// TranscriptGlob is where a session's transcript lies under
// $CLAUDE_CONFIG_DIR: projects/<cwd>/<session id>.jsonl. The CLI names the
// middle directory after the run's working directory; a session id is
// unique, so any directory holding it will do (a worktree's cwd differs
// from the workspace's). Open it with safefile.OpenGlob, which keeps
// resolution inside the config dir, never through a symlink, and does not
// block on a FIFO; check sessionID's shape first.
func TranscriptGlob(sessionID string) string {
	return path.Join("projects", "*", sessionID+".jsonl")
}

// EachLine reads a CLI transcript from r as hostile input: a line at a
// time, each at most MaxTranscriptLine bytes. It calls f with every
// non-blank line and its number (from 1) until f returns false. A line too
// long is skipped and, when skipped is not nil, reported to it with its
// number and safefile.ErrLineTooLong. EachLine returns nil at the end of r
// or when f stops, else r's read error (a torn last line of a live session
// is still handed to f first).
func EachLine(r io.Reader, f func(n int, line []byte) bool, skipped func(n int, err error)) error {
	lr := safefile.NewLineReader(r, MaxTranscriptLine)
	for n := 1; ; n++ {
		line, err := lr.Next()
		if errors.Is(err, safefile.ErrLineTooLong) {
			if skipped != nil {
				skipped(n, err)
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 && !f(n, line) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("transcript: read: %w", err)
		}
	}
}
