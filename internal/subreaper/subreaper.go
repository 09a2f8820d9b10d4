// Package subreaper is the containment helper of internal/broker on Linux: the running
// binary (whatever imports internal/broker: flameox, a test binary) re-executed through
// /proc/self/exe with Name as argv[0] and Arg as its first argument. Its init
// (subreaper_linux.go) makes itself a child subreaper, starts the workload and reaps.
// Every process the workload leaves behind, a setsid daemon or a double fork included,
// reparents to the helper rather than to init, so the helper sees the whole tree by
// parent links alone and kills all of it when the workload exits, when the broker asks
// (closing the control pipe: a limit or cancellation), and when the broker dies (the
// control pipe reaches EOF even on SIGKILL; PR_SET_PDEATHSIG delivers SIGTERM as well).
//
// Its arguments are Arg, the options, the executable and the argv. The options are "-"
// (none) or a comma-separated list of scope=FD (a cgroup v2 scope's directory, into which
// the helper clones the workload, CLONE_INTO_CGROUP, while it stays outside), join=FD (a
// v1 pids group's tasks file, through which the helper's forking thread joins the group
// before it forks the workload), home=FD (the tasks file it returns through once the
// workload runs; both are written "0", the writer) and nproc=N (the workload's
// RLIMIT_NPROC is the user's tasks at launch plus N); internal/broker encodes them (its
// helperFiles), this package parses them. The control pipe is fd 3; the protocol, on fd
// 4, is one line each: "started PID tasks=KIND" (KIND: cgroup_v1 or rlimit where the
// helper applied that bound, else -) followed by " scope=1" where the workload was cloned
// into the scope, or " scope=0" where the kernel refused that and the workload started
// outside; "starterr MESSAGE" or "nosubreaper ERROR" (the helper could not become a
// subreaper and started nothing); then "end exit|signal N killed K" once nothing of the
// tree is left.
//
// A helper started ahead of its invocation (internal/broker's Prestart) has ArgWaiting
// alone as its argument, and its control channel on fd 3 is a SOCK_SEQPACKET socket: it
// initializes, prepares its signal handling, then waits there for one message, the
// invocation (EncodeInvocation: options, executable, directory, argv and environment)
// with the workload's standard input, output and error attached (SCM_RIGHTS), followed by
// the files the options name, which name them by their position among the attached files
// (scope=3 is the fourth). It goes on as above; an end of the channel, or a stop signal,
// before the message ends the helper, having started and reported nothing. The broker
// starts such a helper before it makes the scope and the task bound, so that the
// helper's start overlaps their making.
//
// The helper's work runs from this package's init, and Go initializes, at each step, the
// lexically smallest package whose imports are all initialized: a dependency that sorts
// after the binary's other packages (golang.org/x/sys, but also the standard library's
// strings, or fmt, which waits for internal/fmtsort) is initialized only once those
// ready before it are, and the helper with it, after most of the binary
// (docs/decisions/0067-start-up.md, Addendum). So this package and internal/procfs import
// only standard packages that are initialized with os or just after it (bytes rather
// than strings, strconv rather than fmt), and internal/archtest holds them to that list.
package subreaper

import "strconv"

// Arg is the helper's first argument, which makes the binary the helper.
const Arg = "--flameox-broker-reaper-v2"

// Name is argv[0] of the helper, as ps shows it.
const Name = "flameox-reaper"

// ArgWaiting is the first argument of a helper started ahead of its invocation.
const ArgWaiting = "--flameox-broker-reaper-waiting-v2"

// MaxInvocationFiles bounds the files a waiting helper's invocation message attaches:
// the workload's three standard streams and the files of its task options (scope, join,
// home).
const MaxInvocationFiles = 6

// MaxInvocationBytes bounds a waiting helper's invocation message (EncodeInvocation's
// payload); the broker starts a larger invocation with a helper of its own.
const MaxInvocationBytes = 64 << 10

// EncodeInvocation is the payload of a waiting helper's invocation message: the task
// options ("-" for none), the executable, the working directory ("" for the helper's),
// the count of argv, argv and the environment, each followed by a NUL byte.
func EncodeInvocation(opts, path, dir string, argv, env []string) []byte {
	b := make([]byte, 0, 256)
	field := func(s string) { b = append(append(b, s...), 0) }
	field(opts)
	field(path)
	field(dir)
	field(strconv.Itoa(len(argv)))
	for _, a := range argv {
		field(a)
	}
	for _, e := range env {
		field(e)
	}
	return b
}
