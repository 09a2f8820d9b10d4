//go:build linux && (mips || mipsle || mips64 || mips64le)

package subreaper

// rlimitNproc is RLIMIT_NPROC on MIPS (arch/mips/include/uapi/asm/resource.h).
const rlimitNproc = 8
