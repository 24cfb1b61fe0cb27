package streamjson

import "encoding/json"

// BlocksTurn is a turn whose content is an array of content blocks: its
// text first, then others (images, a note on attached files):
// {"type":"user","message":{"role":"user","content":[{"type":"text","text":"…"},{"type":"image",…}]}}.
// Measured with the pinned CLI (runner/fakeapi TestClaudeForwardsImageBlocks):
// an image block reaches the model as sent.
type BlocksTurn struct {
	Type    string        `json:"type"` // "user"
	Message BlocksMessage `json:"message"`
}

// BlocksMessage is a BlocksTurn's message.
type BlocksMessage struct {
	Role    string            `json:"role"` // "user"
	Content []json.RawMessage `json:"content"`
}

// NewBlocksTurn returns the line that starts a turn with text and then
// the blocks.
func NewBlocksTurn(text string, blocks []json.RawMessage) (BlocksTurn, error) {
	first, err := json.Marshal(map[string]string{"type": "text", "text": text})
	if err != nil {
		return BlocksTurn{}, err
	}
	content := append([]json.RawMessage{first}, blocks...)
	return BlocksTurn{Type: "user", Message: BlocksMessage{Role: "user", Content: content}}, nil
}
