package askuser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heartbeatInterval is how often a waiting ask_user call sends MCP progress.
// The CLI resets its idle timeout for a tool on every notifications/progress
// (and over Streamable HTTP fails a silent call at 60 s); 10 s keeps well
// inside every limit seen.
const heartbeatInterval = 10 * time.Second

const toolDescription = `Ask the user (the people working with you in this Parley chat) a question and wait for their reply.

Use it when you need a decision, a preference or a fact that only the user can give and you cannot proceed sensibly without it: choosing between approaches with real trade-offs, confirming a destructive or irreversible step, or resolving an ambiguous request. Do not use it for what you can find out yourself by reading files or running commands, and do not ask for approval of routine steps.

Offer options when the answer is one of a few choices (the user may still add free text); set multiSelect when several options can apply. Omit options for an open question. The call blocks until the user answers, the question times out, or the run is stopped; on a timeout, carry on with your best judgment.`

// serverInstructions tell the model, once per session, how the parley
// tools behave.
const serverInstructions = `The parley server lets you ask the people working with you in this Parley chat and wait for their answer: ask_user for one question, ask_user_questions for a small form of up to four. A person answers in the browser (or a terminal); the call blocks until then. The result says whether the question was answered, declined (with a reason), timed out or cancelled (the run was stopped): never assume an answer that is not in the result. Give a question an "id" to read its answer from answersById. Pass "timeout" (seconds) only when the answer is useless after a while.`

// askTool is the ask_user tool: it relays each call through asker.
type askTool struct {
	asker     Asker
	heartbeat time.Duration
	cfg       Config // the timeout bounds
}

// annotations are the hints both tools give the client: they change
// nothing, ask people (an open world) and are not idempotent.
func annotations(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, DestructiveHint: jsonschema.Ptr(false),
		IdempotentHint: false, OpenWorldHint: jsonschema.Ptr(true)}
}

// timeoutSchema is the "timeout" argument of both tools.
func timeoutSchema(c Config) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(float64(MinTimeoutSeconds)),
		Description: "Seconds to wait for an answer before the call returns timed out. Omit for the project's default."}
	if max := c.MaxTimeout(); max > 0 {
		s.Maximum = jsonschema.Ptr(float64(max))
		s.Description = fmt.Sprintf("Seconds to wait for an answer (%d–%d) before the call returns timed out. Omit for the project's default (%d).",
			MinTimeoutSeconds, max, c.TimeoutSeconds)
	}
	return s
}

// Serve runs the ask_user MCP server, named "parley", over the
// newline-delimited JSON-RPC streams in and out (stdin and stdout when the
// claude CLI starts it), relaying each call to the server described by c.
// It returns nil when the client closes the stream or ctx ends.
func Serve(ctx context.Context, c Config, in io.ReadCloser, out io.WriteCloser) error {
	t := &askTool{asker: NewClient(c), heartbeat: heartbeatInterval, cfg: c}
	err := newServer(t).Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	// A reply written after the client closed its end (a call it had
	// just cancelled) meets a closed pipe: the client is gone all the same.
	gone := errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
	if err != nil && !errors.Is(err, context.Canceled) && !gone {
		return fmt.Errorf("serve ask_user: %w", err)
	}
	return nil
}

// newServer returns an MCP server offering t as the tool ask_user.
func newServer(t *askTool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "parley", Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: serverInstructions})
	s.AddTool(&mcp.Tool{
		Name:        "ask_user",
		Title:       "Ask the user",
		Description: toolDescription,
		InputSchema: inputSchema(t.cfg),
		Annotations: annotations("Ask the user"),
	}, t.handler("ask_user", decodeQuestion, false))
	s.AddTool(&mcp.Tool{
		Name:        "ask_user_questions",
		Title:       "Ask the user several questions",
		Description: formDescription,
		InputSchema: formSchema(t.cfg),
		Annotations: annotations("Ask the user several questions"),
	}, t.handler("ask_user_questions", decodeForm, true))
	return s
}

// inputSchema is the ask_user input schema, spelled out rather than inferred
// from Question so that every field has one plain type (no ["null","array"]
// unions, which some clients reject) and a description for the model.
func inputSchema(c Config) *jsonschema.Schema {
	closed := closedSchema()
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"question": {
				Type:        "string",
				Description: "The question, complete and self-contained: the user may not have followed your work.",
			},
			"options": {
				Type:        "array",
				Description: "2–4 choices to offer, if the answer is one (or several) of a few. Omit for an open question.",
				MinItems:    jsonschema.Ptr(minOptions),
				MaxItems:    jsonschema.Ptr(maxOptions),
				Items:       optionSchema(),
			},
			"multiSelect": {
				Type:        "boolean",
				Description: "Let the user choose more than one option.",
				Default:     json.RawMessage("false"),
			},
			"timeout": timeoutSchema(c),
		},
		Required:             []string{"question"},
		AdditionalProperties: closed,
	}
}

// closedSchema is additionalProperties: false.
func closedSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// optionSchema is one choice the model offers, in ask_user's options and in
// a form question's.
func optionSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"label":       {Type: "string", Description: "The short text of the choice; returned when chosen."},
			"description": {Type: "string", Description: "What choosing it means, if the label is not enough."},
		},
		Required:             []string{"label"},
		AdditionalProperties: closedSchema(),
	}
}

// handler serves calls of the tool name, whose arguments decode reads
// into a form. Problems with the call itself become error results the
// model can read and act on, never protocol errors.
func (t *askTool) handler(name string, decode func(json.RawMessage) (Form, error), structured bool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f, err := decode(req.Params.Arguments)
		if err == nil {
			err = t.cfg.CheckTimeout(f.TimeoutSeconds)
		}
		if err != nil {
			return errorResult("Invalid " + name + " arguments: " + err.Error() + ". Fix the arguments and call " + name + " again."), nil
		}
		return t.ask(ctx, req, f, structured), nil
	}
}

// ask relays f and turns the outcome into a result: text, and for a form
// structured content too. Measured on claude 2.1.328: when a result has
// structuredContent the model reads that JSON instead of the text, so the
// text goes into it as "message", and the single-question tool keeps its
// plain-text result ("User selected: Blue").
func (t *askTool) ask(ctx context.Context, req *mcp.CallToolRequest, f Form, structured bool) *mcp.CallToolResult {
	if token := req.Params.GetProgressToken(); token != nil {
		stop := t.startHeartbeat(ctx, req.Session, token)
		defer stop()
	}
	f.ToolUseID = toolUseID(req)
	a, err := t.asker.Ask(ctx, f)
	if err != nil {
		// The CLI sends notifications/cancelled when the user interrupts
		// the turn, which cancels ctx; the asker's request died with it.
		if ctx.Err() == nil {
			return errorResult("ask_user could not reach the user: " + err.Error())
		}
		a = Answer{Status: StatusCancelled, Reason: "the tool call was cancelled"}
	}
	text, isError := a.ResultText(f)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
	if structured {
		sc := a.Structured(f)
		sc["message"] = text
		res.StructuredContent = sc
	}
	return res
}

// decodeQuestion parses and validates the ask_user arguments into a form
// of one question.
func decodeQuestion(args json.RawMessage) (Form, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return Form{}, errors.New("question: required")
	}
	var in struct {
		Question    string   `json:"question"`
		Options     []Option `json:"options"`
		MultiSelect bool     `json:"multiSelect"`
		Timeout     int      `json:"timeout"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	// Report misspelt fields (say "multiselect") instead of ignoring them.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Form{}, err
	}
	q := Question{Question: in.Question, Options: in.Options, MultiSelect: in.MultiSelect}
	if err := q.Validate(); err != nil {
		return Form{}, err
	}
	f := Single(q)
	f.TimeoutSeconds = in.Timeout
	return f, f.Validate()
}

// startHeartbeat sends progress notifications for token until ctx ends or
// the returned stop is called; stop waits for the goroutine to finish.
// The ticker is a heartbeat that tells the client the call is alive, not a
// poll: the answer arrives on the held relay request.
func (t *askTool) startHeartbeat(ctx context.Context, ss *mcp.ServerSession, token any) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(t.heartbeat)
		defer ticker.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n),
				Message:       "waiting for the user to answer",
			})
			if err != nil {
				return // the session is closing; the call's own result will say so
			}
		}
	}()
	return func() { cancel(); <-done }
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// toolUseID returns the CLI's tool_use id of a call: "Each tools/call
// carries _meta["claudecode/toolUseId"] = the tool_use id on stdout"
// (shared/claude-cli.md).
func toolUseID(req *mcp.CallToolRequest) string {
	if req.Params == nil {
		return ""
	}
	id, _ := req.Params.Meta["claudecode/toolUseId"].(string)
	return id
}
