package views

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// imageLinks renders a markdown image as a link to it: a page never fetches
// an image named by model output on its own (it could carry data out in its
// URL, or track who reads the session); a reader who wants it clicks.
type imageLinks struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (imageLinks) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindImage, renderImageLink)
}

func renderImageLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	if !entering {
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<a class="image-link" rel="nofollow noopener noreferrer" href="`)
	if !html.IsDangerousURL(n.Destination) {
		_, _ = w.Write(util.EscapeHTML(util.URLEscape(n.Destination, true)))
	}
	_, _ = w.WriteString(`">image: `)
	if !n.HasChildren() {
		_, _ = w.Write(util.EscapeHTML(n.Destination))
	}
	return ast.WalkContinue, nil
}
