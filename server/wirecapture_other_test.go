//go:build !linux

package server

import (
	"errors"
	"net"
)

// The remote viewers' capture is Linux's (wirecapture_linux_test.go).
type wireCapture struct{}

var errNoWireCapture = errors.New("the remote viewers' capture needs Linux")

func probeWireCapture() error                    { return errNoWireCapture }
func startWireCapture(int) (*wireCapture, error) { return nil, errNoWireCapture }
func (*wireCapture) checkResent(int) error       { return errNoWireCapture }
func (*wireCapture) finish() ([]wireSeg, error)  { return nil, errNoWireCapture }
func detach(net.Conn) (int, error)               { return -1, errNoWireCapture }
func reattach(int) (net.Conn, error)             { return nil, errNoWireCapture }
