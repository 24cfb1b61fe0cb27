// Package attach checks, names and delivers the images and files a member
// attaches to a prompt: images go to Claude as image content blocks of the
// stream-json user message; other files are saved into the session's
// worktree (or the project's workspace) under .parley/uploads/, and a text
// block tells Claude where. The kind of an upload is decided by its bytes,
// never by its name or the type the browser claims.
package attach

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig of the kinds ImageType names
	_ "image/jpeg"
	_ "image/png"
	"path/filepath"
	"strings"

	"parley/limit"
)

// Limits. The page checks them before anything is sent (static/attach.js
// reads them from the attach control's data attributes); the server checks
// them again.
const (
	// MaxImageBytes bounds one image: the Messages API refuses larger ones.
	MaxImageBytes = 5 << 20
	// MaxFileBytes bounds one other file.
	MaxFileBytes = 10 << 20
	// MaxCount bounds the attachments of one message.
	MaxCount = 10
	// MaxMessageBytes bounds all the attachments of one message together.
	MaxMessageBytes = 16 << 20
	// MaxPending bounds the uploads a member keeps unsent in one session
	// (a page closed before Send leaves some; they go after a day).
	MaxPending = 2 * MaxCount
	// MaxPendingBytes bounds what a member keeps unsent across all
	// sessions together: uploads wait in the database.
	MaxPendingBytes = 4 * MaxMessageBytes
	// UploadBodyBytes is the body limit of one upload request (package
	// limit's Body): the largest file and its multipart framing.
	UploadBodyBytes = MaxFileBytes + 64<<10
)

// Kinds of attachment.
const (
	KindImage = "image"
	KindFile  = "file"
)

// Error is a refusal whose text is the sentence the member sees.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func refuse(format string, a ...any) error { return &Error{fmt.Sprintf(format, a...)} }

// Upload is a checked upload: its clean name, kind and media type.
type Upload struct {
	Name, Kind, MediaType string
	Data                  []byte
}

// Check decides what an upload is from its bytes and refuses, with a
// sentence, a bad name, a size over its kind's limit, or a file that says
// it is a PNG, JPEG, GIF or WebP image (by name or by the browser's type)
// but is not one.
func Check(name, declared string, data []byte) (Upload, error) {
	name, err := CleanName(name)
	if err != nil {
		return Upload{}, err
	}
	u := Upload{Name: name, Kind: KindFile, MediaType: "application/octet-stream", Data: data}
	if mt := ImageType(data); mt != "" {
		u.Kind, u.MediaType = KindImage, mt
	} else if claimsImage(name, declared) {
		return Upload{}, refuse("%s is not a PNG, JPEG, GIF or WebP image (its content is something else): attach a real image, or rename the file to attach it as a file.", name)
	}
	if u.Kind == KindImage {
		if err := checkPixels(name, data); err != nil {
			return Upload{}, err
		}
	}
	if u.Kind == KindImage && int64(len(data)) > MaxImageBytes {
		return Upload{}, refuse("%s is %s; an image may be at most %s.", name, limit.TextSize(int64(len(data))), limit.TextSize(MaxImageBytes))
	}
	if int64(len(data)) > MaxFileBytes {
		return Upload{}, refuse("%s is %s; a file may be at most %s.", name, limit.TextSize(int64(len(data))), limit.TextSize(MaxFileBytes))
	}
	return u, nil
}

// ImageType is the media type of a PNG, JPEG, GIF or WebP image, read
// from its first bytes, or "" for anything else.
func ImageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// claimsImage says the name or the browser's type claims one of the four
// image types.
func claimsImage(name, declared string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp":
		return true
	}
	switch strings.ToLower(strings.TrimSpace(strings.Split(declared, ";")[0])) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// MaxImageSide bounds an image's width and height: the Messages API
// refuses larger ones, and a small file with a huge header (a
// decompression bomb) must not reach the pages that show it.
const MaxImageSide = 8000

// checkPixels refuses a PNG, JPEG or GIF whose header says it is larger
// than MaxImageSide a side. (A header that cannot be read is left to the
// model's API; WebP's is not read: the standard library has no decoder.)
func checkPixels(name string, data []byte) error {
	c, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	if c.Width > MaxImageSide || c.Height > MaxImageSide {
		return refuse("%s is %d × %d pixels; an image may be at most %d pixels a side. Scale it down and attach it again.", name, c.Width, c.Height, MaxImageSide)
	}
	return nil
}

// CheckMessage refuses a message whose attachments are too many or too
// large together.
func CheckMessage(count int, total int64) error {
	if count > MaxCount {
		return refuse("This message has %d attachments; the limit is %d. Remove some and send again.", count, MaxCount)
	}
	if total > MaxMessageBytes {
		return refuse("The attachments of this message are %s together; the limit is %s. Remove some and send again.", limit.TextSize(total), limit.TextSize(MaxMessageBytes))
	}
	return nil
}
