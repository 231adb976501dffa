//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The zygote is the helper in its long-lived form: one per sandboxed
// binding, started once in the binding's user (and network) namespace, it
// starts each call's program on request, so that a call costs a fork and
// an exec rather than a helper's start and a new network namespace.
//
// Each program still gets everything a per-call helper gave it: a Landlock
// domain of its own (on amd64 and arm64 the program is made to restrict
// itself while held at its exec, see confineInto; elsewhere the zygote
// confines a fresh thread per call and forks from it; either way
// concurrent calls are sibling domains that cannot signal or trace one
// another), a user namespace of its own nested in the zygote's (so its
// process limit counts only its own processes), and its resource limits,
// set while it is stopped at its exec, before its first instruction
// (ptrace), from outside its sandbox. The zygote's own threads stay
// unconfined (with no_new_privs) where confineInto works.
//
// The worker talks to the zygote over a SOCK_SEQPACKET control socket
// (fd 3): each message is one byte carrying four descriptors by
// SCM_RIGHTS: the call's own socket, then the program's stdin, stdout and
// stderr. On the call's socket the worker writes the request (a JSON
// zygoteRequest) and reads JSON lines back: zygoteReply with the pid once
// the program runs, then zygoteReply with its wait status once it ended
// and its process group was swept. The worker stops a program by signalling
// its group itself; the control socket's end (the worker died) or
// SIGTERM takes every group down, SIGTERM then SIGKILL after the grace.

// zygoteFlag follows the helper flag to start a zygote: the spec and the
// kill grace follow.
const zygoteFlag = "--zygote"

// zygoteControlFD is the control socket's descriptor in the zygote.
const zygoteControlFD = 3

// zygoteReady and zygoteFailed start the zygote's first message on the
// control socket: it is ready (followed by a space and its wireVersion),
// or why it could not start.
const (
	zygoteReady  = "ready"
	zygoteFailed = "failed: "
)

// zygoteRequest is one call's program: its argv (argv[0] its path) and
// environment.
type zygoteRequest struct {
	Argv []string
	Env  []string
}

// zygoteReply is a line the zygote writes on a call's socket: the pid once
// the program runs, or its end (Ended): its wait status and CPU time.
type zygoteReply struct {
	Pid    int
	Ended  bool
	Status uint32
	CPUNs  int64
}

// inlineRequestMax is the largest request the worker sends inside the
// control message itself; a larger one follows on the call's socket and
// the control message carries only requestFollows.
const inlineRequestMax = 8 << 10

// requestFollows is the control message of a request sent on the call's
// socket.
const requestFollows = "c"

// zygote is the zygote's state: the ruleset every program is confined
// with (by confineInto, or, where that does not work, through the thread
// it is forked from), the limits, and the live process groups.
type zygote struct {
	ruleset int
	// execGrants are the grants a program may be run from (see mayExec).
	execGrants []string
	spec       string // the spec, as the helper takes it
	self       string // this program, which serves as the helper
	limits     Limits
	uid, gid   int
	grace      time.Duration
	// traced says programs are held at their exec by ptrace; when this
	// host forbids ptrace, each program is started through the helper
	// instead (see startUntraced).
	traced bool

	mu   sync.Mutex
	live map[int]*child // process groups of programs not yet reaped
}

// runZygote serves calls until the control socket ends or a signal comes,
// then takes down every program still running.
func runZygote(args []string) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "%susage: %s %s SPEC GRACE\n", stderrPrefix, helperFlag, zygoteFlag)
		return ExitSetup
	}
	if err := withNoNewPrivs(); err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", stderrPrefix, err)
		return ExitSetup
	}
	control, z, err := newZygote(args[0], args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", stderrPrefix, err)
		if control != nil {
			_, _ = control.Write([]byte(zygoteFailed + err.Error()))
		}
		return ExitSetup
	}
	if _, err := control.Write(fmt.Appendf(nil, "%s %d", zygoteReady, wireVersion)); err != nil {
		return ExitSetup
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	ended := make(chan struct{})
	var once sync.Once
	go z.accept(control, make([]byte, inlineRequestMax), make([]byte, unix.CmsgSpace(4*4)),
		func() { once.Do(func() { close(ended) }) })
	select {
	case <-sigs:
	case <-ended:
	}
	z.shutdown()
	return 0
}

// withNoNewPrivs makes sure every thread of the zygote, and so every
// program it starts, has no_new_privs (no exec gains privileges, and
// Landlock may be applied): when it is not set, it sets it on this thread
// and executes the zygote again from it. execve keeps it, and every thread
// of the new image descends from that one. Once per zygote, never per
// call.
func withNoNewPrivs() error {
	set, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("prctl(PR_GET_NO_NEW_PRIVS): %v", err)
	}
	if set == 1 {
		return nil
	}
	runtime.LockOSThread() // never unlocked: the exec replaces the process
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	// The running file itself, even if its path was replaced since.
	const self = "/proc/self/exe"
	return fmt.Errorf("exec %s with no_new_privs: %v", self, syscall.Exec(self, os.Args, os.Environ()))
}

// newZygote reads the spec and grace and builds the ruleset.
func newZygote(specJSON, graceText string) (*os.File, *zygote, error) {
	// Inherited without close-on-exec (as every descriptor a child is
	// given): set it, or every program started would hold the control
	// socket, and could take other calls' requests and descriptors.
	syscall.CloseOnExec(zygoteControlFD)
	control, err := pollable(zygoteControlFD, "control")
	if err != nil {
		return nil, nil, fmt.Errorf("control socket: %v", err)
	}
	var s spec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		return control, nil, fmt.Errorf("bad spec: %v", err)
	}
	grace, err := time.ParseDuration(graceText)
	if err != nil {
		return control, nil, fmt.Errorf("bad grace: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return control, nil, fmt.Errorf("own path: %v", err)
	}
	// The runtime's template thread (which starts threads on behalf of
	// locked ones) starts with the first LockOSThread: let it start now,
	// from a thread that is never confined.
	runtime.LockOSThread()
	traced := mayTrace()
	runtime.UnlockOSThread()
	fd, err := buildRuleset(s)
	if err != nil {
		return control, nil, err
	}
	return control, &zygote{ruleset: fd, execGrants: execGrants(s), spec: specJSON, self: self, limits: s.Limits,
		uid: os.Getuid(), gid: os.Getgid(), grace: grace, traced: traced, live: make(map[int]*child)}, nil
}

// mayTrace says whether this process may hold a child at its exec: a
// child asks to be traced (PTRACE_TRACEME) and then fails its exec of a
// directory. EPERM instead says ptrace is forbidden here
// (kernel.yama.ptrace_scope=3, or a seccomp profile that denies it).
func mayTrace() bool {
	_, err := syscall.ForkExec("/", []string{"/"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Ptrace: true}})
	return !errors.Is(err, syscall.EPERM)
}

// accept receives calls on the control socket until it ends, then calls
// ended. The goroutine that receives a call serves it, once another has
// taken over receiving (with b and oob, this one's buffers): the call
// starts without waiting for a goroutine to be scheduled.
func (z *zygote) accept(control *os.File, b, oob []byte, ended func()) {
	for {
		n, oobn, err := recvMsg(control, b, oob)
		if err != nil || n == 0 {
			ended()
			return
		}
		fds, err := receivedFDs(oob[:oobn])
		if err != nil || len(fds) != 4 {
			closeFDs(fds)
			continue
		}
		var req *zygoteRequest
		if string(b[:n]) != requestFollows {
			r, err := decodeRequest(b[:n])
			if err != nil {
				closeFDs(fds)
				continue
			}
			req = &r
		}
		go z.accept(control, b, oob, ended)
		z.serve(req, fds)
		return
	}
}

// receivedFDs are the descriptors of a control message (received
// close-on-exec: none leaks into another call's program).
func receivedFDs(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		f, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, f...)
		}
	}
	return fds, nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}

// serve runs one call: req is its request (nil: it follows on the call's
// socket), fds its socket and the program's stdin, stdout and stderr. A
// traced program is started from a locked thread: where confineInto works
// the thread stays unconfined and is unlocked after the start; elsewhere
// it is confined for this call and ended with it (never unlocked).
func (z *zygote) serve(req *zygoteRequest, fds []int) {
	sock := os.NewFile(uintptr(fds[0]), "call")
	defer sock.Close()
	if req == nil {
		r, err := readFollowingRequest(sock)
		if err != nil {
			closeFDs(fds[1:])
			return
		}
		req = &r
	}
	if len(req.Argv) == 0 {
		closeFDs(fds[1:])
		return
	}
	start := z.startUntraced
	if z.traced {
		start = z.start
	}
	c, code, err := start(*req, fds[1:])
	closeFDs(fds[1:])
	if err != nil {
		// As the per-call helper did: start wrote the complaint on the
		// program's stderr; the status says which.
		_, _ = sock.Write(zygoteReply{Ended: true, Status: uint32(code) << 8}.line())
		return
	}
	if _, err := sock.Write(zygoteReply{Pid: c.pid}.line()); err != nil {
		z.kill(c, syscall.SIGKILL) // the worker gave up on the call
	}
	ws, cpu := z.reap(c)
	_, _ = sock.Write(zygoteReply{Ended: true, Status: uint32(ws), CPUNs: int64(cpu)}.line())
}

// child is a program the zygote started and has not reaped yet: its pid
// and a pidfd of it (-1 when the kernel gave none).
type child struct{ pid, pidfd int }

// start starts the program, stopped at its exec until it is confined and
// its namespace and limits are set; on failure it writes why on the
// program's stderr and returns the helper's exit code for it.
func (z *zygote) start(req zygoteRequest, stdio []int) (*child, int, error) {
	fail := func(code int, format string, a ...any) (*child, int, error) {
		err := fmt.Errorf(format, a...)
		_, _ = unix.Write(stdio[2], []byte(stderrPrefix+err.Error()+"\n"))
		return nil, code, err
	}
	// Only the thread that forked a traced program may ptrace it.
	runtime.LockOSThread()
	files := []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2])}
	if canInject {
		// The thread stays unconfined, and serves call after call: the
		// program confines itself at its exec (confineInto), with the
		// ruleset it gets as descriptor rulesetInChild.
		defer runtime.UnlockOSThread()
		if err := z.mayExec(req.Argv[0]); err != nil {
			return fail(execCode(err), "exec %s: %v", req.Argv[0], err)
		}
		files = append(files, uintptr(z.ruleset))
	} else if err := confineThread(z.ruleset); err != nil {
		// Never unlocked: the confined thread ends with the call.
		return fail(ExitSetup, "%v", err)
	}
	pidfd := -1
	attr := childAttr()
	attr.PidFD = &pidfd
	pid, err := syscall.ForkExec(req.Argv[0], req.Argv, &syscall.ProcAttr{Env: req.Env, Files: files, Sys: attr})
	if err != nil {
		return fail(execCode(err), "exec %s: %v", req.Argv[0], err)
	}
	c := &child{pid: pid, pidfd: pidfd}
	z.mu.Lock()
	z.live[pid] = c
	z.mu.Unlock()
	if err := z.release(pid); err != nil {
		z.kill(c, syscall.SIGKILL)
		z.reap(c)
		if errors.Is(err, errExecDenied) {
			return fail(ExitExecDenied, "exec %s: %v", req.Argv[0], err)
		}
		return fail(ExitSetup, "%v", err)
	}
	return c, 0, nil
}

// rulesetInChild is the descriptor a program holds the zygote's ruleset
// as, from its exec until confineInto closes it.
const rulesetInChild = 3

// errExecDenied is why a program outside the grants is refused.
var errExecDenied = errors.New("not beneath the sandbox's read or write grants")

// execCode is the helper's exit code for a program that could not be
// started because of err: ExitExecDenied when it was refused.
func execCode(err error) int {
	if errors.Is(err, errExecDenied) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		return ExitExecDenied
	}
	return ExitSetup
}

// mayExec checks what Landlock checked at the program's exec when the
// zygote forked from a confined thread: that the program (symbolic links
// resolved) lies beneath a grant that lets it run (read and write grants
// both do). A program that cannot be resolved is refused (fail closed);
// checkExec checks again at its exec stop what it then runs.
func (z *zygote) mayExec(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if !covered(real, z.execGrants) {
		return errExecDenied
	}
	return nil
}

// checkExec checks, with the program pid held at its exec stop, that the
// file it runs (the interpreter, for a script) lies beneath a grant that
// lets it run: the path mayExec checked may have been replaced between
// the check and the exec.
func (z *zygote) checkExec(pid int) error {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return fmt.Errorf("what the program runs: %v", err)
	}
	if !covered(exe, z.execGrants) {
		return fmt.Errorf("it runs %s, %w", exe, errExecDenied)
	}
	return nil
}

// execGrants are the spec's read and write grants, symbolic links resolved.
func execGrants(s spec) []string {
	var out []string
	for _, list := range [][]string{s.RX, s.RW} {
		for _, p := range list {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				out = append(out, real)
			}
		}
	}
	return out
}

// startUntraced starts the program where ptrace is forbidden, as
// confined, at the cost of a Go program's start per call: a full fork into
// a user namespace of its own (its maps written by this thread, which is
// never confined), running this program as the per-call helper, which
// confines itself with the spec's Landlock ruleset, sets the limits and
// execs the program. On failure it returns the helper's exit code for it,
// with the complaint on the program's stderr.
func (z *zygote) startUntraced(req zygoteRequest, stdio []int) (*child, int, error) {
	argv := append([]string{z.self, helperFlag, z.spec}, req.Argv...)
	pidfd := -1
	pid, err := syscall.ForkExec(z.self, argv, &syscall.ProcAttr{
		Env:   req.Env,
		Files: []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2])},
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: syscall.CLONE_NEWUSER, PidFD: &pidfd,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: z.uid, HostID: z.uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: z.gid, HostID: z.gid, Size: 1}}},
	})
	if err != nil {
		err = fmt.Errorf("start the sandbox helper %s: %v", z.self, err)
		_, _ = unix.Write(stdio[2], []byte(stderrPrefix+err.Error()+"\n"))
		return nil, ExitSetup, err
	}
	c := &child{pid: pid, pidfd: pidfd}
	z.mu.Lock()
	z.live[pid] = c
	z.mu.Unlock()
	return c, 0, nil
}

// childAttr is how a program starts: in a process group of its own,
// killed if its thread of the zygote ends (with confineInto, threads are
// kept: it dies with the zygote), stopped at its exec (traced), and,
// unless confineInto will make it, in a user namespace of its own.
func childAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Ptrace: true}
	if !canInject {
		a.Unshareflags = syscall.CLONE_NEWUSER
	}
	return a
}

// release lets the program stopped at its exec go, once it is confined
// (where confineInto works, after checkExec), its user namespace maps its
// user and group and its limits are set. Signals sent to it while it was
// held are queued again just before it goes.
func (z *zygote) release(pid int) error {
	held, err := awaitExec(pid)
	if err != nil {
		return err
	}
	return z.releaseHeld(pid, held)
}

// releaseHeld is release once the program pid is held at its exec stop;
// held are the signals sent to it so far.
func (z *zygote) releaseHeld(pid int, held []syscall.Signal) error {
	if canInject {
		if err := z.checkExec(pid); err != nil {
			return err
		}
		if err := confineInto(pid, rulesetInChild, &held); err != nil {
			return err
		}
		// This thread was never confined: it may write under /proc.
		if err := z.prepare(pid); err != nil {
			return err
		}
	} else {
		// The maps are written under /proc, which this thread's sandbox
		// denies: a goroutine that is not locked runs on a thread that
		// was never confined (confined threads are locked and end with
		// their call).
		errc := make(chan error, 1)
		go func() { errc <- z.prepare(pid) }()
		if err := <-errc; err != nil {
			return err
		}
	}
	if err := queueAgain(pid, held); err != nil {
		return err
	}
	if err := syscall.PtraceDetach(pid); err != nil {
		return fmt.Errorf("ptrace detach: %v", err)
	}
	return nil
}

// prepare maps the program's user and group in its user namespace and
// sets its resource limits. Its setgroups is already "deny", inherited
// from the zygote's namespace (which lets the zygote map its own group
// without CAP_SETGID above it).
func (z *zygote) prepare(pid int) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	for _, w := range []struct{ file, data string }{
		{"gid_map", fmt.Sprintf("%d %d 1\n", z.gid, z.gid)},
		{"uid_map", fmt.Sprintf("%d %d 1\n", z.uid, z.uid)},
	} {
		if err := writeProcFile(dir+w.file, w.data); err != nil {
			return err
		}
	}
	return setLimits(pid, z.limits)
}

// writeProcFile writes data to a file under /proc in one write (plain
// system calls: os.File would try the runtime's poller first).
func writeProcFile(path, data string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	_, err = unix.Write(fd, []byte(data))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// reap waits for the program to end, sweeps its group before its pid is
// released (so the group id cannot have been reused), then reaps it.
func (z *zygote) reap(c *child) (syscall.WaitStatus, time.Duration) {
	pid := c.pid
	awaitExit(c)
	z.mu.Lock()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	delete(z.live, pid)
	z.mu.Unlock()
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err := syscall.Wait4(pid, &ws, 0, &ru)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return ws, cpu
}

// awaitExit returns once c has exited, leaving it to be reaped. With a
// pidfd it waits in the runtime's poller, so no thread sits in a system
// call for the program's whole run (which would have the runtime's
// monitor hand its processor off and start threads, call after call).
func awaitExit(c *child) {
	exited := func(idtype, id int, flags int) bool {
		var info unix.Siginfo
		err := unix.Waitid(idtype, id, &info, unix.WEXITED|unix.WNOWAIT|flags, nil)
		return !errors.Is(err, syscall.EINTR) && (err != nil || info.Signo != 0)
	}
	if c.pidfd >= 0 {
		f, err := pollable(c.pidfd, "pidfd")
		if err == nil {
			defer f.Close()
			if rc, err := f.SyscallConn(); err == nil &&
				rc.Read(func(fd uintptr) bool { return exited(unix.P_PIDFD, int(fd), unix.WNOHANG) }) == nil {
				return
			}
		}
	}
	for !exited(unix.P_PID, c.pid, 0) {
	}
}

// kill signals c's group unless c was already reaped.
func (z *zygote) kill(c *child, sig syscall.Signal) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.live[c.pid] == c {
		_ = syscall.Kill(-c.pid, sig)
	}
}

// shutdown does what the worker would have: SIGTERM to every live group,
// up to the grace for them to end, then SIGKILL.
func (z *zygote) shutdown() {
	z.signalAll(syscall.SIGTERM)
	deadline := time.Now().Add(z.grace)
	for time.Now().Before(deadline) && z.liveCount() > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	z.signalAll(syscall.SIGKILL)
}

func (z *zygote) signalAll(sig syscall.Signal) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for pid := range z.live {
		_ = syscall.Kill(-pid, sig)
	}
}

func (z *zygote) liveCount() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return len(z.live)
}
