// Package transcript brings a session's event log up to date with the
// claude CLI's own transcript of the conversation: the session's .jsonl
// under CLAUDE_CONFIG_DIR/projects/. After Parley crashed, or lost a write,
// what Claude said and did is still there; the Reconciler appends what the
// log lacks, marked as recovered, and closes a run that never recorded its
// end.
//
// The transcript is written by the run's own uid, so it is read as hostile
// input: never through a symlink out of the config dir, never a FIFO or
// device, lines bounded in size, malformed lines skipped.
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"regexp"

	"parley/safefile"
	"parley/streamjson"
)

// entry is one transcript line of the kinds the log also holds.
type entry = streamjson.Entry

// sessionIDPattern is what a CLI session id looks like (a UUID); anything
// else never reaches a path.
var sessionIDPattern = regexp.MustCompile(`^[0-9a-fA-F-]{8,64}$`)

// open finds the session's transcript under configDir
// (streamjson.TranscriptGlob). safefile.OpenGlob keeps resolution inside
// configDir, never through a symlink, and opening a FIFO does not block.
func open(configDir, sessionID string) (*os.File, error) {
	if !sessionIDPattern.MatchString(sessionID) {
		return nil, fmt.Errorf("transcript: bad session id %q", sessionID)
	}
	f, err := safefile.OpenGlob(configDir, streamjson.TranscriptGlob(sessionID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	return f, err
}

// read returns the transcript's assistant messages and tool results of the
// main conversation (not subagents'), in order. A missing transcript is
// fs.ErrNotExist.
func read(configDir, sessionID string, log *slog.Logger) ([]entry, error) {
	f, err := open(configDir, sessionID)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f, log)
}

// parse reads transcript lines from r, keeping those the log also holds.
func parse(r io.Reader, log *slog.Logger) ([]entry, error) {
	var out []entry
	err := Each(r, func(e streamjson.Entry, _ []byte) bool {
		if kept(e) {
			out = append(out, e)
		}
		return true
	}, func(n int, err error) {
		if errors.Is(err, safefile.ErrLineTooLong) {
			log.Warn("transcript line too long; skipped", "line", n)
			return
		}
		log.Warn("malformed transcript line; skipped", "line", n, "err", err)
	})
	return out, err
}

// Each reads a CLI transcript from r, as hostile input, through
// streamjson.EachLine: a line at a time, each bounded in size. It calls f
// with every line that decodes as an entry, and the line itself, until f
// returns false. A line too long
// (safefile.ErrLineTooLong) or malformed is skipped and, when skipped is
// not nil, reported to it with its number (from 1); blank lines are
// skipped silently. Each returns nil at the end of r, or r's read error
// (a torn last line of a live session is still handed to f first).
func Each(r io.Reader, f func(e streamjson.Entry, line []byte) bool, skipped func(n int, err error)) error {
	return streamjson.EachLine(r, func(n int, line []byte) bool {
		var e streamjson.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			if skipped != nil {
				skipped(n, err)
			}
			return true
		}
		return f(e, line)
	}, skipped)
}

// kept reports whether the log holds this kind of line: the main
// conversation's assistant messages, and user lines carrying tool results.
func kept(e entry) bool {
	if e.IsSidechain || e.UUID == "" || len(e.Message) == 0 {
		return false
	}
	switch e.Type {
	case "assistant":
		// A prime's answer came from Parley's gateway, on a branch the
		// rewind left: never part of the session (runner/prime.go).
		return !streamjson.IsPrimeAnswer(e.Message)
	case "user":
		var m streamjson.Message
		if json.Unmarshal(e.Message, &m) != nil {
			return false
		}
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				return true
			}
		}
	}
	return false
}
