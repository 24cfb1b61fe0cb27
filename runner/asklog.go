package runner

import (
	"log/slog"
)

// logResolved logs how an ask ended, with its ids: "ask answered" (by
// whom), "ask declined", "ask timed out", "ask cancelled" or "ask expired".
// Every ask's lifecycle is then in the log: opened, maybe detached, and
// exactly one of these.
func logResolved(log *slog.Logger, p AskPayload, status string, resp Response, detached bool) {
	msg := map[string]string{"answered": "ask answered", "denied": "ask declined", "timed_out": "ask timed out",
		"cancelled": "ask cancelled", "expired": "ask expired"}[status]
	if msg == "" {
		msg = "ask resolved"
	}
	log.Info(msg, "input_id", p.InputID, "kind", p.Kind, "source", p.Source, "tool", p.ToolName,
		"request_id", p.RequestID, "tool_use_id", p.ToolUseID, "status", status, "by", resp.By,
		"reason", resp.Reason, "detached", detached)
}
