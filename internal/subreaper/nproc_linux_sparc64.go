//go:build linux && sparc64

package subreaper

// rlimitNproc is RLIMIT_NPROC on SPARC (arch/sparc/include/uapi/asm/resource.h).
const rlimitNproc = 7
