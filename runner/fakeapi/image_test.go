package fakeapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"testing"
)

// TestClaudeForwardsImageBlocks measures what the pinned CLI does with a
// stream-json user message whose content is an array of a text block and
// an image block (what Parley writes for a prompt with an image): the
// model's request carries the image block, with its bytes, as sent.
func TestClaudeForwardsImageBlocks(t *testing.T) {
	bin := ClaudeBin(t)
	s := Serve(t, Scenario{{Text: "I see it."}})
	img := testPNG(t, 8, 8)
	data := base64.StdEncoding.EncodeToString(img)
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What is in this image?"},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}},
	}}})
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), s.Env(dir)...)
	cmd.Stdin = bytes.NewReader(append(line, '\n'))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Raw, &body); err != nil {
		t.Fatal(err)
	}
	var found bool
	var all []json.RawMessage
	for _, m := range body.Messages {
		all = append(all, m.Content...)
	}
	for _, raw := range all {
		var b struct {
			Type   string                                 `json:"type"`
			Source struct{ Type, MediaType, Data string } `json:"source"`
		}
		_ = json.Unmarshal(raw, &b)
		var src struct {
			MediaType string `json:"media_type"`
		}
		var outer struct {
			Source json.RawMessage `json:"source"`
		}
		_ = json.Unmarshal(raw, &outer)
		_ = json.Unmarshal(outer.Source, &src)
		if b.Type == "image" {
			t.Logf("image block: source type %q, media type %q, %d base64 bytes (sent %d), equal: %v", b.Source.Type, src.MediaType, len(b.Source.Data), len(data), b.Source.Data == data)
		}
		if b.Type == "image" && b.Source.Type == "base64" && src.MediaType == "image/png" && b.Source.Data == data {
			found = true
		}
	}
	if !found {
		t.Errorf("no image block with the bytes sent in the request: %.3000s", reqs[0].Raw)
	}
	if got := reqs[0].LastUserText(); got != "What is in this image?" {
		t.Logf("LastUserText = %q", got)
	}
}

// testPNG is a real w×h PNG: the CLI decodes images (an invalid one
// reaches the model as a text block saying it could not be processed).
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			m.Set(x, y, color.RGBA{uint8(x * 30), uint8(y * 30), 200, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
