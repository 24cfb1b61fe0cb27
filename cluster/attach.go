package cluster

import (
	"context"

	"parley/runner"
)

// PromptWork is Prompt for a prompt with attachments (w.Content,
// w.Attached: package attach): they go with it to whichever replica owns
// the session.
func (n *Node) PromptWork(ctx context.Context, sessionID string, start runner.Starter, w runner.QueuedWork) error {
	return n.promptWork(ctx, sessionID, start, w)
}
