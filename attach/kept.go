package attach

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Kept is what the saved queue keeps of a prompt's attachments while the
// prompt waits for a claude slot: the prompt event's record of them
// (Sent: ids, names, types, sizes, saved paths) and the content blocks
// that are not images (the note on saved files). Never an image's bytes:
// Restore reads them again from the attachments table when the prompt is
// finally sent, on whichever replica sends it.
type Kept struct {
	Attached json.RawMessage   `json:"attached"`
	Notes    []json.RawMessage `json:"notes,omitempty"`
}

// Keep is what the saved queue keeps of a prompt's content blocks and
// its attachments' record; nil when the prompt has none.
func Keep(content []json.RawMessage, attached json.RawMessage) (json.RawMessage, error) {
	if len(content) == 0 && len(attached) == 0 {
		return nil, nil
	}
	k := Kept{Attached: attached}
	for _, b := range content {
		if blockType(b) != KindImage {
			k.Notes = append(k.Notes, b)
		}
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("keep attachments: %w", err)
	}
	return raw, nil
}

// ErrGone says an attachment of a kept prompt is no longer in the
// attachments table.
var ErrGone = errors.New("the attachment is gone")

// Restore rebuilds a kept prompt's content blocks as they were sent to
// the queue: each image of its record, in order, as an image block of the
// bytes image returns for it, then the notes. An image that is gone
// (image returns ErrGone) becomes a text block that says so, so the
// message still goes; any other error is returned (try again later).
func Restore(kept json.RawMessage, image func(id string) (mediaType string, data []byte, err error)) (content []json.RawMessage, attached json.RawMessage, err error) {
	if len(kept) == 0 {
		return nil, nil, nil
	}
	var k Kept
	var sent []Sent
	if err := json.Unmarshal(kept, &k); err != nil {
		return nil, nil, fmt.Errorf("read kept attachments: %w", err)
	}
	if len(k.Attached) > 0 {
		if err := json.Unmarshal(k.Attached, &sent); err != nil {
			return nil, nil, fmt.Errorf("read kept attachments: %w", err)
		}
	}
	for _, s := range sent {
		if s.Kind != KindImage {
			continue
		}
		b, err := restoreImage(s, image)
		if err != nil {
			return nil, nil, err
		}
		content = append(content, b)
	}
	return append(content, k.Notes...), k.Attached, nil
}

// restoreImage is the image block of s, or a text block saying it is gone.
func restoreImage(s Sent, image func(id string) (string, []byte, error)) (json.RawMessage, error) {
	mt, data, err := image(s.ID)
	if errors.Is(err, ErrGone) {
		return TextBlock(fmt.Sprintf("(The user attached the image %s, but Parley no longer has it.)", s.Name))
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.ID, err)
	}
	return ImageBlock(mt, data)
}

// blockType is a content block's "type".
func blockType(b json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &t)
	return t.Type
}
