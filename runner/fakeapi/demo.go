package fakeapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DemoQuestion is the question the Demo scenario asks through Parley's ask_user tool.
const DemoQuestion = "Which colour should the new button be?"

// Demo returns a scenario for trying Parley's ask flow without an Anthropic
// key: the model explains, asks the user a question with mcp__parley__ask_user,
// then quotes the answer it received. Serve it with PerTurn set (as
// ListenAndServe does) so that every prompt of every session replays it.
func Demo() Scenario {
	return Scenario{
		{
			Text: "This is Parley's demo model: no Anthropic key needed. " +
				"I'm about to add a button, and I'd like your opinion before I do, " +
				"so I'm asking you through Parley's ask_user tool.",
			Chunks:     4,
			ChunkDelay: 100 * time.Millisecond,
			ToolName:   "mcp__parley__ask_user",
			ToolInput: map[string]any{
				"question": DemoQuestion,
				"options": []map[string]string{
					{"label": "Blue", "description": "Calm, matches the logo"},
					{"label": "Green", "description": "Signals success"},
					{"label": "Orange", "description": "Stands out"},
				},
			},
		},
		{
			Text:       "Thanks! The ask_user tool returned:\n\n> " + ToolResultPlaceholder + "\n\nThat's the end of the demo; send another message to run it again.",
			Chunks:     3,
			ChunkDelay: 100 * time.Millisecond,
		},
	}
}

// ListenAndServe serves the scenario on addr in PerTurn mode, for the
// `parley fake-model` subcommand, until ctx ends.
func ListenAndServe(ctx context.Context, addr string, sc Scenario, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fake model listen: %w", err)
	}
	s := New(sc)
	s.PerTurn, s.Log = true, log
	srv := &http.Server{Handler: s}
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		srv.Close()
	}()
	if log != nil {
		log.Info("fake model listening", "url", "http://"+ln.Addr().String())
	}
	err = srv.Serve(ln)
	cancel()
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("fake model serve: %w", err)
}
