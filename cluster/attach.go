package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"parley/attach"
	"parley/runner"
	"parley/store"
)

// PromptWork is Prompt for a prompt with attachments (w.Content,
// w.Attached: package attach): they go with it to whichever replica owns
// the session.
func (n *Node) PromptWork(ctx context.Context, sessionID string, start runner.Starter, w runner.QueuedWork) error {
	return n.promptWork(ctx, sessionID, start, w)
}

// restoreAttachments gives w, a prompt read back from the saved queue or
// forwarded by another replica, its attachments again (kept: what
// attach.Keep kept of them): the
// record its prompt event makes, and its content blocks, each image's
// bytes read from the attachments table. A database error is
// runner.ErrUnavailable: the prompt is tried again later, not dropped.
func (n *Node) restoreAttachments(ctx context.Context, kept json.RawMessage, w *runner.QueuedWork) error {
	if len(kept) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, queueClaimWait)
	defer cancel()
	content, attached, err := attach.Restore(kept, func(id string) (string, []byte, error) {
		a, err := n.Store.GetAttachment(ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && a.Data == nil {
			return "", nil, attach.ErrGone
		}
		if err != nil {
			return "", nil, fmt.Errorf("%w: %w", runner.ErrUnavailable, err)
		}
		return a.MediaType, a.Data, nil
	})
	if err != nil {
		return fmt.Errorf("restore the attachments of a prompt: %w", err)
	}
	w.Content, w.Attached = content, attached
	return nil
}
