package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"parley/streamjson"
)

// Priming a process started ahead of its first message.
//
// The CLI's first turn in a process costs about 100 ms of its own work
// more than a later one (measured on 2.1.328: 140 ms against 42 ms from
// the prompt to the model request, docs/performance.md), work that
// `initialize` does not do ahead. A warm process and a resume ahead are
// therefore given a turn of their own first: its model request is
// answered by Parley's gateway, never forwarded (gateway.Prime), and the
// conversation is then rewound to before it (streamjson.NewRewind), so the
// session's first message finds a process that has done its first turn,
// and the model is sent exactly what it would have been sent without the
// prime (TestPrimeLeavesNoTrace). Without a gateway in front of the model
// there is nothing to answer a prime, and the process is readied with
// `initialize` as before.

// primer is a Gateway that can answer a token's requests itself.
type primer interface {
	Prime(token string) (end func())
}

// primeTimeout bounds a prime: the CLI's start and its first turn, which
// under a full machine take seconds.
const primeTimeout = 30 * time.Second

// rewindID is the request id of a prime's rewind.
const rewindID = "parley-rewind"

// primerFor is the gateway that can prime a process started with spec,
// or nil when there is none or spec's model traffic does not pass it.
func (s *Supervisor) primerFor(spec Spec) primer {
	p, ok := s.cfg.Gateway.(primer)
	if !ok || spec.ModelToken == "" {
		return nil
	}
	return p
}

// prime gives p its prime turn and rewinds it away, reading p's stdout
// until the rewind is answered; the run that takes p reads on from there
// (process.decoder). p's output meanwhile is Parley's own bookkeeping, not
// the session's: none of it is recorded. It gives up after timeout, or
// once stop is closed (Parley stopping). A prime that fails ends p before
// the gateway stops answering p's token itself: a CLI that took longer
// than the bound would otherwise send its prime turn to the model, charged
// (TestAttackPrimeTimeoutNeverReachesModel). The caller still reaps p.
func prime(p *process, gw primer, token string, timeout time.Duration, stop <-chan struct{}) error {
	if timeout <= 0 {
		timeout = primeTimeout
	}
	end := gw.Prime(token)
	defer end()
	done := make(chan error, 1)
	go func() { done <- primeTurn(p) }()
	var err error
	select {
	case err = <-done:
		if err == nil {
			return nil
		}
		done <- err // halt need not wait for it
	case <-time.After(timeout):
		err = fmt.Errorf("prime: no answer within %s", timeout)
	case <-stop:
		err = errClosed
	}
	p.halt(done)
	return err
}

// haltWait bounds how long halt waits for a killed process's stdout to
// end, when no cgroup says it is empty.
const haltWait = 5 * time.Second

// halt kills p's process group and cgroup and waits until p's stdout has
// ended (primeTurn's read, done): p then sends nothing more. It does not
// reap p.
func (p *process) halt(done <-chan error) {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if p.group != nil {
		_ = p.group.Kill()
	}
	select {
	case <-done:
	case <-time.After(haltWait):
	}
}

// primeTurn writes the prime turn, waits for its result, rewinds it and
// waits for the rewind's answer.
func primeTurn(p *process) error {
	if err := writeLine(p, streamjson.NewUserTurn(streamjson.PrimeText)); err != nil {
		return err
	}
	dec := p.decoder()
	var target string
	for {
		l, err := dec.Next()
		if err != nil {
			return fmt.Errorf("prime: claude's output ended: %w", err)
		}
		switch {
		case l.Err != nil:
			continue
		case l.Type == "user" && target == "":
			target = primeEcho(l.Raw)
		case l.Type == "result":
			var res struct {
				IsError bool     `json:"is_error"`
				Subtype string   `json:"subtype"`
				Errors  []string `json:"errors"`
			}
			if json.Unmarshal(l.Raw, &res) != nil || res.IsError {
				return fmt.Errorf("prime: the turn failed: %s %.300q", res.Subtype, res.Errors)
			}
			if target == "" {
				return errors.New("prime: claude did not echo the prime turn")
			}
			if err := writeLine(p, streamjson.NewRewind(rewindID, target)); err != nil {
				return err
			}
		case l.Type == "control_response":
			if ours, err := rewindAnswer(l, rewindID); ours {
				if err != nil {
					return fmt.Errorf("prime: %w", err)
				}
				return nil
			}
		}
	}
}

// primeEcho is the uuid of the CLI's echo of the prime turn
// (--replay-user-messages), or "" when l is another user line.
func primeEcho(raw json.RawMessage) string {
	var u struct {
		UUID    string `json:"uuid"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return ""
	}
	var text string
	if json.Unmarshal(u.Message.Content, &text) == nil && text == streamjson.PrimeText {
		return u.UUID
	}
	var blocks []streamjson.ContentBlock
	if json.Unmarshal(u.Message.Content, &blocks) == nil && len(blocks) == 1 && blocks[0].Type == "text" && blocks[0].Text == streamjson.PrimeText {
		return u.UUID
	}
	return ""
}

// writeLine writes one stdin line to a process no run writes to yet.
func writeLine(p *process, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("prime: write to claude: %w", err)
	}
	return nil
}

// kill ends a process no run took: its whole group and cgroup, reaped.
func (p *process) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	_ = p.end()
}

// primeAhead primes a run's process started ahead of any message
// (ResumeAhead), before the run's goroutines start: a message that comes
// meanwhile waits for the start, as it would for a cold one, and then
// finds the process primed. ctx is the start's. Shutdown waits for it and
// ends it: a start must not go on priming, and then record a run, after
// Parley stopped (TestAttackShutdownDuringPrime); a stop or a fence of
// the start's window ends it too (supervisor_window.go), so that an
// archived session or a deleted project gets no process when its prime
// is done (TestAttackArchiveDuringPrime).
func (s *Supervisor) primeAhead(ctx context.Context, r *Run, p *process) error {
	gw := s.primerFor(r.spec)
	if gw == nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.wg.Add(1) // before Shutdown's Wait: closed is set under s.mu first
	}
	s.mu.Unlock()
	if closed {
		p.kill()
		return errClosed
	}
	defer s.wg.Done()
	if err := s.window.check(r.spec.SessionID); err != nil { // stopped before its prime (supervisor_window.go)
		p.kill()
		return err
	}
	id := r.spec.SessionID
	yielded := make(chan struct{}) // closed when the start gives way
	stop, quit := s.closing(ctx, s.window.stoppedOf(id), yielded)
	defer quit()
	gaveWay := s.giveWay(ctx, id, yielded) // to a merge of the session's worktree (ahead_yield.go)
	err := prime(p, gw, r.spec.ModelToken, s.cfg.PrimeTimeout, stop)
	switch gave, stopped := gaveWay(), s.window.check(id); {
	case gave:
		err = errGaveWay
	case stopped != nil:
		err = stopped
	case err == nil && s.isClosed():
		err = errClosed
	}
	if err != nil {
		p.kill()
		return err
	}
	r.primed = true
	return nil
}

// closingPoll is how often a prime looks whether Parley is stopping.
const closingPoll = 20 * time.Millisecond

// closing is closed once Shutdown begins, ctx ends or stopped or yielded
// is closed (a nil channel never is); quit stops looking.
func (s *Supervisor) closing(ctx context.Context, stopped, yielded <-chan struct{}) (stop <-chan struct{}, quit func()) {
	ch, q := make(chan struct{}), make(chan struct{})
	go func() {
		t := time.NewTicker(closingPoll)
		defer t.Stop()
		for !s.isClosed() {
			select {
			case <-q:
				return
			case <-ctx.Done():
				close(ch)
				return
			case <-stopped:
				close(ch)
				return
			case <-yielded:
				close(ch)
				return
			case <-t.C:
			}
		}
		close(ch)
	}()
	return ch, func() { close(q) }
}

// isClosed says whether Shutdown has begun.
func (s *Supervisor) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
