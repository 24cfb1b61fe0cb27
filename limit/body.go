package limit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Body refuses request bodies over the limit limitFor gives the request
// (the default when it gives 0) with 413 and a sentence saying so. Bodies
// within it are read whole here (they are forms of at most a few hundred
// KB) so no handler can meet a truncated one, and the handler still sees
// an http.MaxBytesReader.
func Body(def int64, limitFor func(*http.Request) int64, tooLarge func(w http.ResponseWriter, r *http.Request, limit int64), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := def
		if m := limitFor(r); m > 0 {
			n = m
		}
		if r.ContentLength > n {
			tooLarge(w, r, n)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, n))
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge(w, r, n)
			return
		}
		if err != nil {
			http.Error(w, "The request could not be read.", http.StatusBadRequest)
			return
		}
		r.Body = http.MaxBytesReader(w, io.NopCloser(bytes.NewReader(b)), n)
		next.ServeHTTP(w, r)
	})
}

// Size says n bytes in words: "64 KB".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
