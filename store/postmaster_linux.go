package store

import "syscall"

// postmasterSysProcAttr puts postgres in its own process group, so a terminal's Ctrl-C does
// not shut it down under the server's feet, and has the kernel send it SIGINT (fast shutdown)
// if the server dies without stopping it.
func postmasterSysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT, Credential: cred}
}
