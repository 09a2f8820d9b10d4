package broker

import "golang.org/x/sys/unix"

// defaultMechanism is the containment macOS runs.
const defaultMechanism = "process_group"

// running reports whether pid is a live (non-zombie) process.
func running(pid int) bool {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	return err == nil && int(kp.Proc.P_pid) == pid && kp.Proc.P_stat != sZomb
}
