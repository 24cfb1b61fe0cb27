package hub

import (
	"bytes"
	"context"
	"strings"

	"parley/views"
)

// MaxCoalesce bounds how many waiting frames one WebSocket message carries.
const MaxCoalesce = 512

// Coalescer gathers the frames waiting for one socket into one message,
// and runs of streamed text deltas into one delta: a page that fell behind
// applies one swap for a burst, not one per token.
type Coalescer struct {
	buf       bytes.Buffer
	delta     strings.Builder
	deltaMsg  string // the message the gathered delta belongs to
	deltaSeq  int64
	hasFrames bool
}

// Add gathers f after the frames already gathered.
func (c *Coalescer) Add(f Frame) {
	c.hasFrames = true
	if f.IsDelta {
		if f.Msg != c.deltaMsg {
			c.flushDelta()
		}
		c.delta.WriteString(f.Delta)
		c.deltaMsg, c.deltaSeq = f.Msg, f.Seq
		return
	}
	c.flushDelta()
	c.buf.Write(f.Data)
}

// flushDelta renders the gathered delta text as one fragment, in the shape
// the page's fast path recognises (static/app.js).
func (c *Coalescer) flushDelta() {
	if c.delta.Len() == 0 {
		return
	}
	ctx := context.Background()
	_ = views.TextDelta(c.deltaMsg, c.delta.String()).Render(ctx, &c.buf)
	_ = views.LastSeq(c.deltaSeq).Render(ctx, &c.buf)
	c.delta.Reset()
}

// Take returns the message and empties the coalescer; nil when empty.
func (c *Coalescer) Take() []byte {
	c.flushDelta()
	if !c.hasFrames {
		return nil
	}
	b := bytes.Clone(c.buf.Bytes())
	c.buf.Reset()
	c.hasFrames = false
	return b
}
