//go:build linux && !(mips || mipsle || mips64 || mips64le || sparc64)

package subreaper

// rlimitNproc is RLIMIT_NPROC (asm-generic/resource.h), which package syscall does not
// name.
const rlimitNproc = 6
