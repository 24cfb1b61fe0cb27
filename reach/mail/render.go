package mail

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	"unicode"

	"parley/reach"
)

// maxSubject is the longest subject, in characters, "[Parley] " included.
const maxSubject = 150

const subjectPrefix = "[Parley] "

// Link is one button of the mail: a one-click answer's confirm page
// (<base>/reach/a/<token>?action=<id>) or any other page.
type Link struct {
	Title string
	URL   string
}

// Render returns the subject and the text and HTML bodies Send would mail
// for m, so the server can show a preview. Everything from the message is
// escaped in the HTML; the subject is one line of at most 150 characters.
func Render(m reach.Message, links []Link) (subject, text, html string, err error) {
	subject = Subject(m.Title)
	text = renderText(m, links)
	var b bytes.Buffer
	if err := htmlBody.Execute(&b, htmlData{Subject: subject, M: m, Links: links}); err != nil {
		return "", "", "", fmt.Errorf("render mail html: %w", err)
	}
	return subject, text, b.String(), nil
}

// Subject makes the subject line for a title: "[Parley] " and the title on
// one line (every line break, tab or other control character becomes a
// space, so nothing can start a new header), trimmed, cut to 150
// characters with "…".
func Subject(title string) string {
	s := subjectPrefix + strings.Join(strings.FieldsFunc(title, isBreak), " ")
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxSubject {
		s = strings.TrimSpace(string(r[:maxSubject-1])) + "…"
	}
	return s
}

// isBreak splits a title into the words of one line: spaces, and every
// control or line/paragraph-separator character (CR, LF, U+2028…).
func isBreak(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// where says "project · session", with whichever of the two is known.
func where(m reach.Message) string {
	var parts []string
	for _, p := range []string{m.Project, m.Session} {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " · ")
}

func renderText(m reach.Message, links []Link) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(m.Title))
	if body := strings.TrimSpace(m.Body); body != "" {
		fmt.Fprintf(&b, "%s\n\n", body)
	}
	if w := where(m); w != "" {
		fmt.Fprintf(&b, "%s\n\n", w)
	}
	fmt.Fprintf(&b, "Open the ask: %s\n", m.URL)
	if len(links) > 0 {
		b.WriteString("\n")
	}
	for _, l := range links {
		fmt.Fprintf(&b, "%s: %s\n", l.Title, l.URL)
	}
	b.WriteString("\n-- \n" + footer(links) + "\n")
	return b.String()
}

// footer says why the mail came and, with answer links, that opening one
// answers nothing by itself (the confirm page's POST does).
func footer(links []Link) string {
	s := "Parley sent this because Claude is waiting for an answer in a project of yours."
	if len(links) > 0 {
		s += " An answer link opens a page that asks you to confirm; opening it answers nothing."
	}
	return s
}

type htmlData struct {
	Subject string
	M       reach.Message
	Links   []Link
}

func (d htmlData) Where() string  { return where(d.M) }
func (d htmlData) Footer() string { return footer(d.Links) }

// htmlBody is escaped by html/template: the title, body, project and
// session are text; a link whose URL is not http(s) becomes "#ZgotmplZ".
var htmlBody = htmltemplate.Must(htmltemplate.New("mail").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2328;max-width:40em">
<h1 style="font-size:1.2em">{{.M.Title}}</h1>
{{with .M.Body}}<pre style="white-space:pre-wrap;font-family:ui-monospace,Menlo,Consolas,monospace;background:#f6f8fa;padding:.75em;border-radius:6px">{{.}}</pre>
{{end}}{{with .Where}}<p style="color:#59636e">{{.}}</p>
{{end}}<p><a href="{{.M.URL}}">Open the ask</a></p>
{{if .Links}}<p>{{range .Links}}<a href="{{.URL}}" style="display:inline-block;margin:0 .5em .5em 0;padding:.5em 1em;border-radius:6px;background:#1f6feb;color:#fff;text-decoration:none">{{.Title}}</a>
{{end}}</p>
{{end}}<p style="color:#59636e;font-size:.85em">{{.Footer}}</p>
</body></html>
`))
