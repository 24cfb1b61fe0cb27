package runner

import "syscall"

// dieWithParent asks Linux to SIGTERM the CLI when Parley dies without
// stopping it (a crash, SIGKILL): an orphaned CLI must not go on talking to
// the model while another replica takes its session over. SIGTERM, not
// SIGKILL, so it still writes the transcript the takeover resumes from.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
