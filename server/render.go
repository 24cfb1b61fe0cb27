package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"parley/hub"
	"parley/runner"
	"parley/store"
	"parley/streamjson"
	"parley/views"
)

// maxShown bounds the text of one tool input or result on the page; the
// whole of it stays in the event log.
const maxShown = 16 << 10

// renderer turns events into the out-of-band fragments a page applies. It
// is a pure function of the events except for one thing: while replaying a
// backlog it skips the streamed deltas of messages that completed later in
// the same backlog and shows the completed text where the stream began, as
// the live page does (the CLI may run a tool of the message, an ask, before
// it prints the completed message).
type renderer struct {
	backlog   bool
	completed map[string]string // backlog: message id → its completed text
	skipped   map[string]bool   // backlog: messages whose stream was not sent
	skipping  bool              // backlog: inside a completed message's stream
	// paged: the backlog is read a page at a time, so completed holds the
	// ids of completed messages but not their texts; a skipped stream
	// leaves an empty block that the completed message replaces in place.
	paged bool
	// st is the top-level message streaming now, whose block the deltas
	// name (render_stream.go); resolve (or the tracker) reads it from the
	// log when the renderer did not see it start, and unbound says a
	// fragment was left out because it could not be known.
	st      streamState
	resolve func(at int64) (streamState, bool)
	unbound bool
	// tracker and session: a live renderer reads the stream through the
	// publisher's tracker.
	tracker *streamTracker
	session string
}

// newPagedRenderer prepares to replay a backlog page by page; completed
// are the ids of the messages that complete in it (store.CompletedMessages).
func newPagedRenderer(completed map[string]bool) *renderer {
	r := &renderer{backlog: true, paged: true, completed: make(map[string]string, len(completed)), skipped: map[string]bool{},
		st: streamState{known: true}}
	for id := range completed {
		r.completed[id] = ""
	}
	return r
}

// newBacklogRenderer prepares to replay evs.
func newBacklogRenderer(evs []store.Event) *renderer {
	r := &renderer{backlog: true, completed: map[string]string{}, skipped: map[string]bool{}, st: streamState{known: true}}
	for _, e := range evs {
		if e.Type != "assistant" {
			continue
		}
		var a streamjson.MessageLine[streamjson.Message]
		if json.Unmarshal(e.Payload, &a) != nil || a.ParentToolUseID != nil {
			continue
		}
		text := r.completed[a.Message.ID]
		for _, b := range a.Message.Content {
			if b.Type == "text" && b.Text != "" {
				if text != "" {
					text += "\n\n"
				}
				text += b.Text
			}
		}
		r.completed[a.Message.ID] = text
	}
	return r
}

// frame renders a batch of events into one frame ending with the last seq.
func (r *renderer) frame(ctx context.Context, evs []store.Event) hub.Frame {
	var buf bytes.Buffer
	for _, e := range evs {
		for _, c := range r.components(e) {
			if err := c.Render(ctx, &buf); err != nil {
				fmt.Fprintf(&buf, "<!-- render %d: %v -->", e.Seq, err)
			}
		}
	}
	last := evs[len(evs)-1].Seq
	_ = views.LastSeq(last).Render(ctx, &buf)
	return hub.Frame{Seq: last, Data: buf.Bytes()}
}

// components maps one event to what the page shows of it.
func (r *renderer) components(e store.Event) []templ.Component {
	switch e.Type {
	case "prompt":
		var p struct {
			Text, By       string
			Queued, Parley bool
		}
		_ = json.Unmarshal(e.Payload, &p)
		cs := append([]templ.Component{appendTo(views.Prompt(e.Seq, p.Text, p.By, p.Queued, p.Parley))}, promptAttachments(e)...) // attach.go
		return append(cs, views.Status("running", true))
	case "stream_event":
		return r.stream(e.Seq, e.Payload)
	case "assistant":
		return append(r.assistant(e.Payload), cutOffMark(e)...)
	case "user":
		return toolResults(e.Payload)
	case "result":
		return append(r.cut(e.Seq, cutByTurnEnd), turnResult(e), views.Status(runner.TurnOutcome(e.Payload), true))
	case "input_requested":
		return askRequested(e)
	case "input_resolved":
		return askResolved(e)
	case "input_detached":
		return askDetached(e)
	case runner.TypeInputDelivered:
		return askDelivered(e)
	case runner.TypeInputUndelivered:
		return askUndelivered(e)
	case "interrupt":
		var p struct{ By string }
		_ = json.Unmarshal(e.Payload, &p)
		return []templ.Component{appendTo(views.Notice(e.Seq, "info", "Stopped by "+orSomeone(p.By)+"."))}
	case "run_ended":
		return append(r.cut(e.Seq, cutByRunEnd), runEnded(e)...)
	case "malformed":
		var p struct {
			Error string
			Text  string
		}
		_ = json.Unmarshal(e.Payload, &p)
		return []templ.Component{appendTo(views.Notice(e.Seq, "warn",
			"Claude printed a line Parley could not read ("+p.Error+"); it is kept in the log."))}
	case "notice":
		var p struct{ Level, Text string }
		_ = json.Unmarshal(e.Payload, &p)
		return []templ.Component{appendTo(views.Notice(e.Seq, p.Level, p.Text))}
	case "system":
		return systemEvent(e)
	case runner.TypeSwitched:
		return switched(e) // modeswitch.go
	}
	return nil // control traffic, heartbeats and unknown types are kept, not shown
}

func appendTo(c templ.Component) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		return views.Append().Render(templ.WithChildren(ctx, c), w)
	})
}

func (r *renderer) assistant(payload []byte) []templ.Component {
	var a streamjson.MessageLine[streamjson.Message]
	if json.Unmarshal(payload, &a) != nil {
		return nil
	}
	if a.ParentToolUseID != nil {
		return subagentSteps(*a.ParentToolUseID, a.Message.Content)
	}
	var out []templ.Component
	for _, b := range a.Message.Content {
		switch b.Type {
		case "text":
			if b.Text == "" {
				continue
			}
			if a.Message.ID == r.st.open {
				r.st.done = true
			}
			// A message whose stream this backlog skipped was shown whole
			// where its stream began; any other has a block to replace.
			if !r.skipped[a.Message.ID] || r.paged {
				out = append(out, views.AssistantText(a.Message.ID, b.Text, true))
			}
		case "thinking":
			out = append(out, appendTo(views.Thinking(b.Thinking)))
		case "tool_use":
			out = append(out, appendTo(views.ToolCall(toolCard(b.ID, b.Name, b.Input))))
		}
	}
	return out
}

// toolResults fills in the results carried by a user event. A subagent's
// own tool results stay in the log: its card lists its calls only.
func toolResults(payload []byte) []templ.Component {
	var u streamjson.MessageLine[streamjson.Message]
	if json.Unmarshal(payload, &u) != nil || u.ParentToolUseID != nil {
		return nil
	}
	var out []templ.Component
	for _, b := range u.Message.Content {
		if b.Type == "tool_result" {
			out = append(out, toolResultView(b.ToolUseID, flattenContent(b.Content), b.IsError))
		}
	}
	return out
}

// flattenContent turns a tool_result's content (a string or text blocks)
// into text.
func flattenContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []streamjson.ContentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func runEnded(e store.Event) []templ.Component {
	var p struct {
		ExitCode int    `json:"exit_code"`
		Reason   string `json:"reason"`
		Stderr   string `json:"stderr"`
		Status   string `json:"status"` // the session's status after the run; absent in older logs
		// GoesOn: Parley carries the session on by itself (runner/goeson.go).
		GoesOn bool `json:"goes_on"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	if p.ExitCode == 0 {
		return []templ.Component{views.Status(orText(p.Status, runner.StatusEnded), true)}
	}
	if strings.HasPrefix(p.Reason, "stopped by Parley") && p.Status == runner.StatusInterrupted {
		// A spending limit or the watchdog ended it, and said so already.
		return []templ.Component{views.Status(p.Status, true)}
	}
	if strings.HasPrefix(p.Reason, "stopped by Parley") && p.GoesOn {
		return []templ.Component{appendTo(views.Notice(e.Seq, "info",
			"Claude's process was stopped by Parley; Parley carries on with the session in a new process, so nothing needs to be sent again.")),
			views.Status(orText(p.Status, runner.StatusEnded), true)}
	}
	if strings.HasPrefix(p.Reason, "stopped by Parley") {
		return []templ.Component{appendTo(views.Notice(e.Seq, "info",
			"Claude's process was stopped by Parley; the next message resumes the session.")), views.Status(orText(p.Status, runner.StatusEnded), true)}
	}
	text := "The Claude process ended (" + p.Reason + ")."
	if s := strings.TrimSpace(p.Stderr); s != "" {
		text += " " + lastLines(s, 3)
	}
	return []templ.Component{appendTo(views.Notice(e.Seq, "error", text)), views.Status(orText(p.Status, runner.StatusError), true)}
}

func systemEvent(e store.Event) []templ.Component {
	var s streamjson.System
	_ = json.Unmarshal(e.Payload, &s)
	switch s.Subtype {
	case "init":
		if s.Model != "" {
			return []templ.Component{views.Model(s.Model)}
		}
	case "api_retry":
		text := "The API returned an error"
		if s.ErrorStatus != nil {
			text += " (HTTP " + strconv.Itoa(*s.ErrorStatus) + ")"
		}
		if s.Error != "" {
			text += ": " + s.Error
		}
		text += fmt.Sprintf(". Claude Code retries by itself (attempt %d of %d).", s.Attempt, s.MaxRetries)
		return []templ.Component{appendTo(views.Notice(e.Seq, "warn", text))}
	case "permission_denied":
		return []templ.Component{appendTo(views.Notice(e.Seq, "warn", "A tool call was denied by the permission rules."))}
	case "status":
		return modeStatus(e) // modeswitch.go
	}
	return nil
}
