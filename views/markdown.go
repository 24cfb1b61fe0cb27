package views

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"sync"

	"github.com/a-h/templ"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	highlighting "github.com/yuin/goldmark-highlighting/v2"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// markdown converts GitHub-flavoured markdown to HTML, with code blocks
// highlighted by chroma as CSS classes (the palette lives in app.css, so it
// follows the page's light or dark scheme and no style attribute is needed).
// It is made on first use, not at package init: the helpers that share the
// parley binary (`parley mcp-askuser`, `parley run-guard`) never render
// markdown and should not pay for building it at every start.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(
			extension.GFM,
			highlighting.NewHighlighting(
				highlighting.WithFormatOptions(chromahtml.WithClasses(true)),
				highlighting.WithGuessLanguage(false),
			),
		),
		// Raw HTML in model text is escaped by goldmark already; bluemonday below
		// is the real guard, so this is defence in depth, not the only one.
		goldmark.WithRendererOptions(html.WithHardWraps(),
			renderer.WithNodeRenderers(util.Prioritized(imageLinks{}, 100))),
	)
})

// sanitizer is bluemonday's UGC policy plus the class attributes chroma's
// class-based output and GFM task lists need. It is safe for concurrent use,
// and made on first use, like markdown.
var sanitizer = sync.OnceValue(func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^image-link$`)).OnElements("a")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^[a-zA-Z0-9_\- ]+$`)).OnElements("pre", "code", "span", "div")
	p.AllowAttrs("type", "checked", "disabled").OnElements("input")
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
})

// MarkdownHTML renders untrusted markdown (model output) to sanitized HTML.
func MarkdownHTML(src string) string {
	var buf bytes.Buffer
	if err := markdown().Convert([]byte(src), &buf); err != nil {
		// goldmark only fails on writer errors; a bytes.Buffer has none.
		// Fall back to the escaped text rather than losing it.
		return sanitizer().Sanitize("<p>" + templ.EscapeString(src) + "</p>")
	}
	return sanitizer().SanitizeReader(&buf).String()
}

// Markdown is a component rendering untrusted markdown (model output) as
// sanitized HTML inside a div of class "md".
func Markdown(src string) templ.Component {
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		if _, err := io.WriteString(w, `<div class="md">`); err != nil {
			return err
		}
		if _, err := io.WriteString(w, MarkdownHTML(src)); err != nil {
			return err
		}
		_, err := io.WriteString(w, `</div>`)
		return err
	})
}
