package server

import (
	"context"
	"errors"

	"parley/store"
)

// retry sends the session's last prompt again, after a turn that failed
// (an API error the CLI gave up on, a turn limit).
func (c *wsConn) retry(ctx context.Context) error {
	sess, v, err := c.s.authorizeSession(ctx, c.r, c.sess.ID, actPrompt)
	if err != nil {
		return err
	}
	if err := c.s.allowPrompt(v.ID); err != nil {
		return err
	}
	text, err := c.s.st.LastPrompt(ctx, sess.ID)
	if errors.Is(err, store.ErrNotFound) {
		return badRequest("There is no earlier message to send again.")
	}
	if err != nil {
		return err
	}
	return c.s.prompt(ctx, sess, text, v.author())
}
