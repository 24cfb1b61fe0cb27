// Package static holds the browser assets, embedded in the binary: htmx 2
// and its WebSocket extension (vendored, unmodified), the stylesheet and the
// page script.
package static

import "embed"

// FS holds the files served under /static/.
//
//go:embed *.js *.css *.webmanifest icons/*.png
var FS embed.FS
