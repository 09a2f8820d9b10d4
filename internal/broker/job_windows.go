package broker

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows an invocation is held by a Job Object of its own (job_object): the workload
// is created suspended, assigned to the job and only then resumed, so every process it
// starts is in the job from its first instruction (a child inherits its parent's job, and
// the job allows no breakaway). The job lists its members (the memory bound sums their
// working sets), TerminateJobObject ends all of them at once, and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE ends them when the broker closes the job's handle:
// at the end of Run, and when the broker itself dies. The task bound is the job's
// active-process limit (processes, not threads). The job's own memory limit is not set:
// it bounds committed memory, not resident, and fails the workload's allocations instead
// of stopping the run with memory_limit_exceeded; the sampled working sets bound it as on
// Linux.

// jobKillCode is the exit status TerminateJobObject gives the processes the broker ends:
// a root that reports it after a kill was terminated, not exited.
const jobKillCode = 0x0F1A0009

// A job is a started invocation in its Job Object.
type job struct {
	cmd *exec.Cmd
	h   windows.Handle
	pid uint32
}

// startContained starts spec suspended, assigns it to a new Job Object and resumes it.
func startContained(spec Spec, outW, errW *os.File, res *Result) (container, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, errors.Join(ErrUncontained, err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	n := taskBound(spec)
	if n > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(min(n, math.MaxUint32))
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, errors.Join(ErrUncontained, err)
	}
	cmd := &exec.Cmd{
		Path: spec.Path, Args: spec.Args, Dir: spec.Dir, Env: spec.Env,
		Stdin: spec.stdin(), Stdout: outW, Stderr: errW,
		// Suspended until it is in the job; a process group of its own, so that a console
		// Ctrl+C meant for the broker does not reach the workload.
		SysProcAttr: &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NEW_PROCESS_GROUP},
	}
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(h)
		return nil, err
	}
	j := &job{cmd: cmd, h: h, pid: uint32(cmd.Process.Pid)}
	if err := j.assignAndResume(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		windows.CloseHandle(h)
		return nil, errors.Join(ErrUncontained, err)
	}
	res.Mechanism = "job_object"
	if n > 0 {
		res.TaskBound, res.MaxTasks = "job_object", n
	}
	return j, nil
}

// assignAndResume puts the suspended root in the job and resumes its threads.
func (j *job) assignAndResume() error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, j.pid)
	if err != nil {
		return err
	}
	err = windows.AssignProcessToJobObject(j.h, p)
	windows.CloseHandle(p)
	if err != nil {
		return err
	}
	return resumeThreads(j.pid)
}

// resumeThreads resumes the threads of the suspended process pid (a process created
// suspended has one: its main thread, whose handle os/exec does not keep).
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if resumed == 0 {
		return errors.New("broker: the suspended workload has no thread to resume")
	}
	return nil
}

// pids returns the processes now in the job.
func (j *job) pids() []uint32 {
	const word = unsafe.Sizeof(uintptr(0))
	n := 64
	for range 8 {
		// JOBOBJECT_BASIC_PROCESS_ID_LIST: two DWORD counts, then ULONG_PTR ids from offset 8.
		buf := make([]uintptr, 8/word+uintptr(n))
		err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
			uintptr(unsafe.Pointer(&buf[0])), uint32(uintptr(len(buf))*word), nil)
		counts := (*[2]uint32)(unsafe.Pointer(&buf[0]))
		if errors.Is(err, windows.ERROR_MORE_DATA) || err == nil && counts[0] > counts[1] {
			n = int(counts[0]) + 16
			continue
		}
		if err != nil {
			return nil
		}
		ids := buf[8/word : 8/word+uintptr(counts[1])]
		out := make([]uint32, len(ids))
		for i, id := range ids {
			out[i] = uint32(id)
		}
		return out
	}
	return nil
}

// processMemoryCounters is PROCESS_MEMORY_COUNTERS (K32GetProcessMemoryInfo).
type processMemoryCounters struct {
	cb, pageFaultCount                                                       uint32
	peakWorkingSetSize, workingSetSize                                       uintptr
	quotaPeakPagedPoolUsage, quotaPagedPoolUsage, quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage, pagefileUsage, peakPagefileUsage                 uintptr
}

var procGetProcessMemoryInfo = windows.NewLazySystemDLL("kernel32.dll").NewProc("K32GetProcessMemoryInfo")

// workingSet returns the working set (resident memory) of pid in bytes, 0 when it cannot
// be read.
func workingSet(pid uint32) int64 {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ, false, pid)
	if err != nil {
		return 0
	}
	defer windows.CloseHandle(p)
	c := processMemoryCounters{cb: uint32(unsafe.Sizeof(processMemoryCounters{}))}
	if r, _, _ := procGetProcessMemoryInfo.Call(uintptr(p), uintptr(unsafe.Pointer(&c)), uintptr(c.cb)); r == 0 {
		return 0
	}
	return int64(c.workingSetSize)
}

func (j *job) wait() error { return j.cmd.Wait() }

func (j *job) sample() (int64, bool) {
	var total int64
	for _, pid := range j.pids() {
		total += workingSet(pid)
	}
	return total, rssMeasured()
}

func (j *job) kill(<-chan error) (int, error, bool) { return j.end(), nil, false }

// end terminates every process in the job, waits briefly until none is left, and returns
// how many it found besides the root.
func (j *job) end() int {
	live := j.pids()
	if len(live) == 0 {
		return 0
	}
	n := 0
	for _, pid := range live {
		if pid != j.pid {
			n++
		}
	}
	_ = windows.TerminateJobObject(j.h, jobKillCode)
	for deadline := time.Now().Add(2 * time.Second); len(j.pids()) > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return n
}

func (j *job) finish(res *Result, waitErr error, killed bool) {
	res.DescendantsTerminated += j.end()
	var killCode *int
	if killed {
		c := jobKillCode
		killCode = &c
	}
	recordExit(res, j.cmd, waitErr, killCode)
}

// release closes the job: KILL_ON_JOB_CLOSE ends anything still in it.
func (j *job) release() { windows.CloseHandle(j.h) }

// rssMeasured: the working set of every process in the job is read.
func rssMeasured() bool { return true }
