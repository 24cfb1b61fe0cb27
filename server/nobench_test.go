//go:build !bench

package server

import (
	"fmt"
	"os"
)

// farmMain stands in for the viewer farm (viewerfarm_test.go) in a test
// binary built without the bench tag, where no benchmark starts it.
func farmMain() int {
	fmt.Fprintln(os.Stderr, "the viewer farm is part of the benchmarks: build the tests with -tags bench")
	return 2
}
