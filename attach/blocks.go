package attach

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"parley/limit"
)

// Sent is one attachment of a sent message, as the prompt event records
// it: no content, only what the transcript shows and where a file went.
type Sent struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// Path is where a file was saved, relative to the directory Claude
	// works in ("" for an image).
	Path string `json:"path,omitempty"`
}

// imageBlock is an image content block of the Messages API.
type imageBlock struct {
	Type   string `json:"type"`
	Source struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// ImageBlock is the content block that sends an image to Claude.
func ImageBlock(mediaType string, data []byte) (json.RawMessage, error) {
	var b imageBlock
	b.Type, b.Source.Type, b.Source.MediaType = "image", "base64", mediaType
	b.Source.Data = base64.StdEncoding.EncodeToString(data)
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("image block: %w", err)
	}
	return raw, nil
}

// FilesNote is the text block that tells Claude where the attached files
// were saved (dir: the directory they are under, absolute). "" when no
// file was attached.
func FilesNote(dir string, files []Sent) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The user attached these files; Parley saved them in your working directory:\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- %s (%s)\n", f.Path, limit.TextSize(f.Size))
	}
	fmt.Fprintf(&b, "(Paths are relative to %s.)", dir)
	return b.String()
}

// TextBlock is a text content block.
func TextBlock(text string) (json.RawMessage, error) {
	raw, err := json.Marshal(map[string]string{"type": "text", "text": text})
	if err != nil {
		return nil, fmt.Errorf("text block: %w", err)
	}
	return raw, nil
}
