//go:build !linux

package runner

import "syscall"

// dieWithParent has no portable equivalent outside Linux.
func dieWithParent(*syscall.SysProcAttr) {}
