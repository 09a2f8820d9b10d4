package providers

import "os"

// ToolEnv is the environment of an external reader or converter (nsys export, perf
// script, ncu, trace_processor_shell, memray) run with scratch directory dir: the server's
// PATH, and dir as its home and as every temporary directory variable, so that what the
// tool writes for itself stays where the worker's disk budget measures it (decision 0050).
func ToolEnv(dir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "TMP=" + dir, "TEMP=" + dir}
}
