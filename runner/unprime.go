package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"parley/safefile"
	"parley/streamjson"
)

// A prime that never got its rewind.
//
// A prime that fails once the CLI has written its turn to the transcript
// (its process killed by Shutdown, a settings change or the timeout while
// the turn ran) leaves that turn at the end of the conversation, and the
// next --resume would load it: the model would see it
// (TestAttackFailedPrimeNeverResumed). A start that resumes a conversation
// whose transcript holds such a turn rewinds it away first, with the same
// rewind_conversation a prime ends with, before anything else is written.

// unprimeID is the request id of that rewind.
const unprimeID = "parley-unprime"

// unprimeTimeout bounds it.
const unprimeTimeout = 30 * time.Second

// unprime rewinds away a prime turn the resumed conversation of p still
// holds, if any. A refused rewind is logged and the run goes on; an error
// (no answer) leaves p to be killed.
func (s *Supervisor) unprime(r *Run, p *process) error {
	target := danglingPrime(r.spec.ConfigDir, r.spec.ClaudeSessionID)
	if target == "" {
		return nil
	}
	if err := writeLine(p, streamjson.NewRewind(unprimeID, target)); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- awaitRewind(p.decoder(), unprimeID) }()
	select {
	case err := <-done:
		if errors.Is(err, errRewindRefused) {
			// The process reads on: the resume goes ahead, prime and all,
			// rather than fail the session's every start.
			r.log.Warn("could not rewind a prime turn a failed prime left in the conversation", "uuid", target, "err", err)
			return nil
		}
		if err == nil {
			r.log.Info("rewound a prime turn a failed prime left in the conversation", "uuid", target)
		}
		return err
	case <-time.After(unprimeTimeout):
		return fmt.Errorf("unprime: no answer within %s", unprimeTimeout)
	}
}

// errRewindRefused says the CLI answered a rewind with a refusal.
var errRewindRefused = errors.New("rewind: refused")

// awaitRewind reads dec until the answer to the rewind id: nil when the
// CLI rewound. Other lines (none come before a first turn) are dropped.
func awaitRewind(dec *Decoder, id string) error {
	for {
		l, err := dec.Next()
		if err != nil {
			return fmt.Errorf("rewind: claude's output ended: %w", err)
		}
		if l.Err != nil || l.Type != "control_response" {
			continue
		}
		if ours, err := rewindAnswer(l, id); ours {
			return err
		}
	}
}

// rewindAnswer reads a control_response line: ours says it answers the
// rewind id, err (errRewindRefused) that the CLI did not rewind.
func rewindAnswer(l Line, id string) (ours bool, err error) {
	var a streamjson.ControlAnswer
	if json.Unmarshal(l.Raw, &a) != nil || a.Response.RequestID != id {
		return false, nil
	}
	var body struct {
		Rewound bool `json:"rewound"`
	}
	if a.Response.Subtype != "success" || json.Unmarshal(a.Response.Response, &body) != nil || !body.Rewound {
		return true, fmt.Errorf("%w: %.300s", errRewindRefused, l.Raw)
	}
	return true, nil
}

// danglingPrime is the uuid of a prime turn that ends the transcript of a
// conversation (nothing after it but its answer) and that no rewind cut
// away (the CLI's rewind appends a last-prompt line with rewound and
// cutUuid), or "". The transcript is the runs' to write: read as hostile
// input, a line at a time, bounded; the worst it can do is have a resume
// rewind its own last turn away.
//
// Only the end can hold one (the prime is the last turn written before its
// process died), and every --resume start waits for this search: it reads
// backwards to the transcript's last turn (a user or assistant entry
// other than a prime's answer), and from there forwards to the end. What
// came before that turn cannot change the answer.
func danglingPrime(configDir, claudeSessionID string) string {
	if configDir == "" || uuid.Validate(claudeSessionID) != nil {
		return ""
	}
	f, err := safefile.OpenGlob(configDir, streamjson.TranscriptGlob(claudeSessionID))
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	return danglingPrimeIn(f, fi.Size(), tailBlock)
}

// danglingPrimeIn is danglingPrime's search through the size bytes of r,
// read block bytes at a time from the end.
func danglingPrimeIn(r io.ReaderAt, size int64, block int) string {
	last, kind := int64(-1), lineOther
	_ = eachLineBackward(r, size, block, streamjson.MaxTranscriptLine, func(off int64, line []byte) bool {
		if kind, _ = primeLine(line); kind == linePrime || kind == lineTurn {
			last = off
			return false
		}
		return true
	})
	if kind != linePrime {
		return "" // no turn, or the conversation went on after any prime
	}
	return openPrime(io.NewSectionReader(r, last, size-last))
}

// openPrime folds the transcript lines of r: the last prime turn, while
// nothing but its answer followed it and no rewind cut it, or "".
func openPrime(r io.Reader) string {
	open := ""
	_ = streamjson.EachLine(r, func(_ int, line []byte) bool {
		switch kind, id := primeLine(line); {
		case kind == linePrime:
			open = id
		case kind == lineCut && id == open:
			open = ""
		case kind == lineTurn:
			// The conversation went on after it: a rewind now would cut
			// what came later. (A resume that loaded the prime is past
			// mending; one that did not has it on a dead branch.)
			open = ""
		}
		return true
	}, nil)
	return open
}

// primeLineKind is what a transcript line means to the dangling-prime
// search.
type primeLineKind int

const (
	lineOther primeLineKind = iota // attachments, bookkeeping, a prime's answer
	linePrime                      // a prime turn; id is its uuid
	lineCut                        // a rewind's last-prompt line; id is the uuid it cut
	lineTurn                       // any other user or assistant entry
)

// primeText is streamjson.PrimeText as it stands inside a JSON string.
var primeText = func() []byte {
	b, _ := json.Marshal(streamjson.PrimeText)
	return b[1 : len(b)-1]
}()

// primeLine classifies a transcript line, with the uuid it names.
func primeLine(line []byte) (kind primeLineKind, id string) {
	isPrime := bytes.Contains(line, primeText)
	if !isPrime && !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"assistant"`)) && !bytes.Contains(line, []byte(`"rewound"`)) {
		return lineOther, "" // most lines: attachments, bookkeeping
	}
	var e struct {
		Type    string          `json:"type"`
		UUID    string          `json:"uuid"`
		Message json.RawMessage `json:"message"`
		Rewound bool            `json:"rewound"`
		Cut     string          `json:"cutUuid"`
	}
	if json.Unmarshal(line, &e) != nil {
		return lineOther, ""
	}
	switch {
	case isPrime && e.Type == "user" && e.UUID != "" && primeEcho(line) == e.UUID:
		return linePrime, e.UUID
	case e.Type == "last-prompt" && e.Rewound:
		return lineCut, e.Cut
	case e.Type == "assistant" && streamjson.IsPrimeAnswer(e.Message):
		return lineOther, ""
	case e.Type == "user" || e.Type == "assistant":
		return lineTurn, ""
	}
	return lineOther, ""
}
