package server

// A message's attachments in the export (export.go): listed, never
// inlined: an image by a link to its authorized route, a file by where it
// was saved.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"parley/attach"
	"parley/limit"
	"parley/store"
)

// exportedAttachment is one attachment of a prompt in the JSON export:
// its id and what is known of it, no content.
type exportedAttachment struct {
	Seq       int64  `json:"seq"` // the prompt event that sent it
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Path      string `json:"path,omitempty"` // a file: where it was saved
	URL       string `json:"url,omitempty"`  // an image: GET it (signed in)
}

// sentAttachments is the record a prompt event keeps of its attachments.
func sentAttachments(payload json.RawMessage) []attach.Sent {
	var p struct {
		Attachments []attach.Sent `json:"attachments"`
	}
	_ = json.Unmarshal(payload, &p)
	return p.Attachments
}

// attachmentURL is where an image can be fetched, under site ("" for a
// path from the site's root).
func attachmentURL(site, id string) string {
	return strings.TrimRight(site, "/") + "/attachments/" + url.PathEscape(id)
}

// exportedAttachments lists the attachments of every prompt in evs.
func exportedAttachments(evs []store.Event) []exportedAttachment {
	out := []exportedAttachment{}
	for _, e := range evs {
		if e.Type != "prompt" {
			continue
		}
		for _, a := range sentAttachments(e.Payload) {
			x := exportedAttachment{Seq: e.Seq, ID: a.ID, Kind: a.Kind, Name: a.Name, MediaType: a.MediaType, Size: a.Size, Path: a.Path}
			if a.Kind == attach.KindImage {
				x.URL = attachmentURL("", a.ID)
			}
			out = append(out, x)
		}
	}
	return out
}

// exportAttachmentsMarkdown lists a prompt's attachments under it.
func exportAttachmentsMarkdown(b *strings.Builder, payload json.RawMessage, site string) {
	list := sentAttachments(payload)
	if len(list) == 0 {
		return
	}
	b.WriteString("Attached:\n\n")
	for _, a := range list {
		if a.Kind == attach.KindImage {
			fmt.Fprintf(b, "- Image [%s](%s) (%s, %s)\n", markdownText(a.Name), attachmentURL(site, a.ID), a.MediaType, limit.TextSize(a.Size))
			continue
		}
		fmt.Fprintf(b, "- File %s (%s), saved at %s\n", markdownText(a.Name), limit.TextSize(a.Size), inlineCode(a.Path))
	}
	b.WriteString("\n")
}

// markdownText escapes what markdown would read as markup in a name.
var markdownText = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "<", `\<`, ">", `\>`, "#", `\#`, "!", `\!`, "|", `\|`).Replace
