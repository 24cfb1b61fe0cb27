package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
func danglingPrime(configDir, claudeSessionID string) string {
	if configDir == "" || uuid.Validate(claudeSessionID) != nil {
		return ""
	}
	f, err := safefile.OpenGlob(configDir, streamjson.TranscriptGlob(claudeSessionID))
	if err != nil {
		return ""
	}
	defer f.Close()
	primeText, _ := json.Marshal(streamjson.PrimeText)
	open := "" // the last prime turn, while nothing but its answer followed it
	_ = streamjson.EachLine(f, func(_ int, line []byte) bool {
		var e struct {
			Type    string          `json:"type"`
			UUID    string          `json:"uuid"`
			Message json.RawMessage `json:"message"`
			Rewound bool            `json:"rewound"`
			Cut     string          `json:"cutUuid"`
		}
		isPrime := bytes.Contains(line, primeText[1:len(primeText)-1])
		if !isPrime && open == "" {
			return true // most lines: only a prime turn starts a search
		}
		if !isPrime && !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"assistant"`)) && !bytes.Contains(line, []byte(`"rewound"`)) {
			return true // attachments, bookkeeping
		}
		if json.Unmarshal(line, &e) != nil {
			return true
		}
		switch {
		case isPrime && e.Type == "user" && e.UUID != "" && primeEcho(line) == e.UUID:
			open = e.UUID
		case e.Type == "last-prompt" && e.Rewound && e.Cut == open:
			open = ""
		case e.Type == "assistant" && streamjson.IsPrimeAnswer(e.Message):
		case e.Type == "user" || e.Type == "assistant":
			// The conversation went on after it: a rewind now would cut
			// what came later. (A resume that loaded the prime is past
			// mending; one that did not has it on a dead branch.)
			open = ""
		}
		return true
	}, nil)
	return open
}
