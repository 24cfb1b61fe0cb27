package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"parley/streamjson"
)

// MaxLineBytes bounds one stdout line. The CLI prints tool results whole, so
// lines of hundreds of kilobytes are normal and 10 MB must work; the bound
// only keeps a runaway process from taking the server's memory.
const MaxLineBytes = 128 << 20

// Line is one decoded stdout line of the CLI.
type Line struct {
	Raw     json.RawMessage // the line itself, without the newline; valid JSON unless Err is set
	Type    string          // "type" of the object; "" when Err is set
	Subtype string
	Err     error // set for a line that is not a JSON object or is too long
}

// Decoder reads the CLI's NDJSON stdout.
type Decoder struct {
	r *bufio.Reader
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next non-empty line. It returns io.EOF at the end of the
// stream. A line that is not a JSON object comes back with Err set and its
// text (truncated when oversized) in Raw as a JSON string, never as an error
// of Next: one bad line must not end the run.
func (d *Decoder) Next() (Line, error) {
	for {
		raw, tooLong, err := d.readLine()
		if len(bytes.TrimSpace(raw)) == 0 && !tooLong {
			if err != nil {
				return Line{}, err
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return Line{}, err
		}
		return decodeLine(raw, tooLong), nil
	}
}

// readLine reads up to and without the next newline. A line longer than
// MaxLineBytes is consumed to its end but only its start is kept.
func (d *Decoder) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := d.r.ReadSlice('\n')
		if len(line)+len(chunk) <= MaxLineBytes {
			line = append(line, chunk...)
		} else {
			tooLong = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

func decodeLine(raw []byte, tooLong bool) Line {
	if tooLong {
		return malformed(raw, fmt.Errorf("line longer than %d bytes", MaxLineBytes))
	}
	if t := bytes.TrimLeft(raw, " \t\r"); len(t) == 0 || t[0] != '{' {
		// null, numbers, strings and arrays decode into a struct without
		// an error, but are not events.
		return malformed(raw, errors.New("not a JSON object"))
	}
	var h streamjson.Header // the few fields Parley routes on; everything else stays in Raw
	if err := json.Unmarshal(raw, &h); err != nil {
		return malformed(raw, fmt.Errorf("not a JSON object: %w", err))
	}
	return Line{Raw: raw, Type: h.Type, Subtype: h.Subtype}
}

// malformedKeep is how much of a bad line is kept for the record.
const malformedKeep = 4 << 10

func malformed(raw []byte, err error) Line {
	keep := raw
	if len(keep) > malformedKeep {
		keep = keep[:malformedKeep]
	}
	text, _ := json.Marshal(map[string]any{
		"error": err.Error(),
		"bytes": len(raw),
		"text":  string(bytes.ToValidUTF8(keep, []byte("\uFFFD"))),
	})
	return Line{Raw: text, Err: err}
}
