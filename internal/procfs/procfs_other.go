//go:build !linux

package procfs

// Stat finds nothing: this OS has no /proc of Linux's form.
func Stat(pid int) (Process, bool) { return Process{}, false }

// Scan finds nothing: this OS has no /proc of Linux's form.
func Scan() []Process { return nil }

// UserTasks counts nothing: this OS has no /proc of Linux's form.
func UserTasks(uid int) uint64 { return 0 }

// Descendants reads nothing: this OS has no /proc of Linux's form.
func Descendants(root int) ([]Process, bool) { return nil, false }

// Children reads nothing: this OS has no /proc of Linux's form.
func Children(pid int) ([]int, bool) { return nil, false }
