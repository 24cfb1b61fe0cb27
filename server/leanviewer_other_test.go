//go:build bench && !linux

package server

import (
	"net"
	"time"
)

// arrivalReader reads with the kernel's receive time stamp on Linux only
// (leanviewer_linux_test.go); elsewhere a viewer stamps what it reads with
// the time it read it.
type arrivalReader struct{}

func newArrivalReader(net.Conn) *arrivalReader { return nil }

func (*arrivalReader) read([]byte) (int, time.Time, error) { panic("unreachable") }
