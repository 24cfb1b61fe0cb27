package views

import (
	"strings"
	"testing"
)

// A file's text is escaped, whatever it holds: a run writes it.
func TestHighlightEscapes(t *testing.T) {
	html, ok := Highlight("page.html", "<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n")
	if !ok {
		t.Fatal("an HTML file was not highlighted")
	}
	for _, bad := range []string{"<script", "<img", "onerror=alert"} {
		if strings.Contains(html, bad) && !strings.Contains(html, "&lt;"+strings.TrimPrefix(bad, "<")) {
			t.Errorf("highlighted HTML holds %q:\n%s", bad, html)
		}
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "<img") {
		t.Errorf("highlighted HTML holds markup of the file:\n%s", html)
	}
	if !strings.Contains(html, `class="chroma"`) {
		t.Errorf("no chroma classes:\n%s", html)
	}
	if _, ok := Highlight("big.go", strings.Repeat("x", MaxHighlight+1)); ok {
		t.Error("a file over MaxHighlight was highlighted")
	}
}

// BenchmarkHighlight is the cost of the largest file a view highlights.
func BenchmarkHighlight(b *testing.B) {
	src := strings.Repeat("func f(a int) string { return fmt.Sprint(a + 1) } // comment\n", MaxHighlight/64)
	for b.Loop() {
		if _, ok := Highlight("x.go", src); !ok {
			b.Fatal("not highlighted")
		}
	}
}
