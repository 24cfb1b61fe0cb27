//go:build unix && !linux

package store

import "syscall"

// postmasterSysProcAttr puts postgres in its own process group, so a terminal's Ctrl-C does
// not shut it down under the server's feet.
func postmasterSysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
