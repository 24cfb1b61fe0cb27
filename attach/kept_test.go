package attach

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeepRestore: what the queue keeps holds no image bytes, and Restore
// gives back the same blocks, in the same order; an image that is gone
// becomes a sentence, and a database error is returned, not swallowed.
func TestKeepRestore(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nIMAGE-BYTES")
	img, _ := ImageBlock("image/png", png)
	sent := []Sent{{ID: "i1", Kind: KindImage, Name: "a.png", MediaType: "image/png", Size: int64(len(png))},
		{ID: "f1", Kind: KindFile, Name: "n.txt", Size: 3, Path: ".parley/uploads/x/n.txt"}}
	attached, _ := json.Marshal(sent)
	note, _ := TextBlock(FilesNote("/w", sent[1:]))
	content := []json.RawMessage{img, note}

	kept, err := Keep(content, attached)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kept), "IMAGE-BYTES") || strings.Contains(string(kept), string(img)) {
		t.Errorf("kept holds the image: %s", kept)
	}
	bytesOf := func(id string) (string, []byte, error) { return "image/png", png, nil }
	got, gotAttached, err := Restore(kept, bytesOf)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strs(content), strs(got)); diff != "" || string(gotAttached) != string(attached) {
		t.Errorf("restored (-want +got):\n%s\nattached %s", diff, gotAttached)
	}

	gone := func(string) (string, []byte, error) { return "", nil, ErrGone }
	got, _, err = Restore(kept, gone)
	if err != nil || len(got) != 2 || !strings.Contains(string(got[0]), "a.png, but Parley no longer has it") {
		t.Errorf("a gone image: %s, %v", strs(got), err)
	}
	down := errors.New("database down")
	if _, _, err := Restore(kept, func(string) (string, []byte, error) { return "", nil, down }); !errors.Is(err, down) {
		t.Errorf("a database error: %v", err)
	}
	if kept, err := Keep(nil, nil); kept != nil || err != nil {
		t.Errorf("a prompt with no attachments keeps %s, %v", kept, err)
	}
}

func strs(bs []json.RawMessage) []string {
	var out []string
	for _, b := range bs {
		out = append(out, string(b))
	}
	return out
}
