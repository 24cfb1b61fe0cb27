package views

import (
	"strings"
	"testing"
)

func TestMarkdownSanitizes(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		bad     []string // must not appear in the output (lower case)
		visible string   // text that must survive, "" = none required
	}{
		{"img onerror", `<img src=x onerror=alert(1)>`, []string{"onerror", "<img"}, ""},
		{"javascript link", `[x](javascript:alert(1))`, []string{"javascript:", "href"}, "x"},
		{"script tag", "before <script>alert(1)</script> after", []string{"<script"}, "before"},
		{"raw html block", "<div onclick=\"alert(1)\">hi</div>", []string{"onclick"}, ""},
		{"autolink js", "<javascript:alert(1)>", []string{`href="javascript`}, ""},
		{"style attr in span", `<span style="color:red" class="x">t</span>`, []string{"style="}, ""},
		{"svg", `<svg onload=alert(1)><circle/></svg>`, []string{"onload", "<svg"}, ""},
		{"data uri image", `![a](data:text/html;base64,PHNjcmlwdD4=)`, []string{"data:text/html"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkdownHTML(tt.src)
			low := strings.ToLower(got)
			for _, b := range tt.bad {
				if strings.Contains(low, b) {
					t.Errorf("MarkdownHTML(%q) = %q; contains %q", tt.src, got, b)
				}
			}
			if tt.visible != "" && !strings.Contains(got, tt.visible) {
				t.Errorf("MarkdownHTML(%q) = %q; lost %q", tt.src, got, tt.visible)
			}
		})
	}
}

func TestMarkdownRenders(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"emphasis and code", "**bold** and `code`", []string{"<strong>bold</strong>", "<code>code</code>"}},
		{"highlighted go block", "```go\nfunc main() {}\n```", []string{`<pre class="chroma">`, `<span class="kd">func</span>`}},
		{"gfm table", "| a | b |\n|---|---|\n| 1 | 2 |", []string{"<table>", "<td>1</td>"}},
		{"link gets nofollow", "[site](https://example.com)", []string{`href="https://example.com"`, `rel="nofollow noopener"`, `target="_blank"`}},
		{"task list", "- [x] done", []string{`type="checkbox"`, "checked"}},
		{"strikethrough", "~~gone~~", []string{"<del>gone</del>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkdownHTML(tt.src)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("MarkdownHTML(%q) = %q; lacks %q", tt.src, got, w)
				}
			}
		})
	}
}

func TestMarkdownImagesAreLinks(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"image with alt text", `![the chart](https://evil.example/x.png?secret=42)`,
			`<a class="image-link" href="https://evil.example/x.png?secret=42" rel="nofollow noopener" target="_blank">image: the chart</a>`},
		{"image without alt text", `![](https://evil.example/t.gif)`,
			`<a class="image-link" href="https://evil.example/t.gif" rel="nofollow noopener" target="_blank">image: https://evil.example/t.gif</a>`},
		{"javascript image", `![x](javascript:alert(1))`, `image: x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkdownHTML(tt.src)
			if strings.Contains(strings.ToLower(got), "<img") || strings.Contains(got, "javascript:") {
				t.Fatalf("MarkdownHTML(%q) = %q; an image is fetched or a script URL kept", tt.src, got)
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("MarkdownHTML(%q) = %q; want it to contain %q", tt.src, got, tt.want)
			}
		})
	}
}
