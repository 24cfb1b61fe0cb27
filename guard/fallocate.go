package guard

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyFallocate refuses, to the guard and everything it starts, every
// fallocate that takes disk blocks (EOPNOTSUPP): all modes but
// FALLOC_FL_PUNCH_HOLE, which only gives blocks back. The disk quota is
// measured, once a period, not enforced by the file system, and
// fallocate writes nothing: measured, sixty 49 MiB files (each under
// RLIMIT_FSIZE) took 2.9 GB in well under a second, and with
// FALLOC_FL_KEEP_SIZE a single call takes blocks past the file size cap.
// A program that gets EOPNOTSUPP writes instead (it is what a file system
// without fallocate answers; glibc's posix_fallocate does so itself), at
// the speed of writes, which the quota watcher and the file system's
// reserve (quota.Config.Reserve) see within a period.
//
// The filter is a seccomp BPF program on the native syscall number and,
// on amd64, the i386 and x32 ones too, so a 32-bit binary cannot go
// around it; it is set on every thread of the guard (TSYNC), since Go
// starts the child from any of them, and children inherit it and cannot
// drop it.
func denyFallocate() error {
	prog := fallocateFilter(runtime.GOARCH)
	if prog == nil {
		return nil // another architecture: RLIMIT_FSIZE alone
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	set := func() syscall.Errno {
		_, _, e := unix.Syscall(unix.SYS_SECCOMP, 1 /* SECCOMP_SET_MODE_FILTER */, 1, /* SECCOMP_FILTER_FLAG_TSYNC */
			uintptr(unsafe.Pointer(&fprog)))
		return e
	}
	e := set()
	if e == unix.EACCES {
		// Without CAP_SYS_ADMIN the kernel asks for no_new_privs first,
		// on every thread.
		if _, _, e2 := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e2 != 0 {
			return fmt.Errorf("set no_new_privs: %w", e2)
		}
		e = set()
	}
	if e != 0 {
		return fmt.Errorf("install the fallocate filter: %w", e)
	}
	return nil
}

// Architectures and fallocate's number on each, from the kernel's
// syscall tables.
const (
	archX86_64  = 0xc000003e
	archI386    = 0x40000003
	archAarch64 = 0xc00000b7
	x32Bit      = 0x40000000
)

// fallocateFilter is the BPF program for goarch, nil for one it does not
// know (arm64's 32-bit compat calls are let through). struct seccomp_data:
// nr at 0, arch at 4, args[i] at 16+8i (its low word first, little
// endian); jumps count forward from the next instruction.
func fallocateFilter(goarch string) []unix.SockFilter {
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	check := []unix.SockFilter{
		ld(24), // args[1], the mode
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: unix.FALLOC_FL_PUNCH_HOLE, Jt: 1, Jf: 0},
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EOPNOTSUPP)),
		ret(unix.SECCOMP_RET_ALLOW), // a hole punched: blocks given back
	}
	switch goarch {
	case "amd64":
		return append([]unix.SockFilter{
			ld(4),                       // 0: arch
			jeq(archX86_64, 0, 3),       // 1: → 2, else → 5
			ld(0),                       // 2: nr
			jeq(285, 5, 0),              // 3: fallocate → 9
			jeq(x32Bit|285, 4, 3),       // 4: x32 fallocate → 9, else → 8
			jeq(archI386, 0, 2),         // 5: → 6, else → 8
			ld(0),                       // 6: nr
			jeq(324, 1, 0),              // 7: i386 fallocate → 9
			ret(unix.SECCOMP_RET_ALLOW), // 8
		}, check...) // 9..12
	case "arm64":
		return append([]unix.SockFilter{
			ld(4),                       // 0: arch
			jeq(archAarch64, 0, 2),      // 1: → 2, else → 4
			ld(0),                       // 2: nr
			jeq(47, 1, 0),               // 3: fallocate → 5
			ret(unix.SECCOMP_RET_ALLOW), // 4
		}, check...)
	}
	return nil
}
