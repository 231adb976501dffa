//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolmesh/toolmesh/internal/supervise"
)

// zygoteStartTimeout bounds a zygote's start, up to its ready message.
const zygoteStartTimeout = 10 * time.Second

// ErrZygoteClosed is Start's error once the Zygote is closed.
var ErrZygoteClosed = errors.New("sandbox: zygote closed")

// Zygote starts a Plan's programs, each confined as the per-call helper
// would confine it, through one long-lived helper process (see
// zygote_linux.go): started with the first program, started again when it
// died, and retired once it has had no program for its idle period. It is
// safe for concurrent use.
type Zygote struct {
	plan  *Plan
	grace time.Duration
	idle  time.Duration

	mu        sync.Mutex
	cur       *zygoteProc
	closed    bool
	devNull   *os.File    // the stdin of programs given none, opened once
	busy      int         // programs started and not yet waited for
	idleSince time.Time   // when busy last fell to 0
	retirer   *time.Timer // retires an idle zygote (made with the first idle period)
}

// DefaultZygoteIdle is how long a Zygote's process is kept without a
// program before it is retired.
const DefaultZygoteIdle = time.Minute

// NewZygote returns the Zygote of pl; grace is what its programs get
// between SIGTERM and SIGKILL when the worker dies, idle how long its
// process is kept without a program before it exits (0:
// DefaultZygoteIdle; the next program starts it again). Nothing starts
// until the first program does.
func NewZygote(pl *Plan, grace, idle time.Duration) *Zygote {
	if idle <= 0 {
		idle = DefaultZygoteIdle
	}
	return &Zygote{plan: pl, grace: grace, idle: idle}
}

// zygoteProc is a running zygote and the worker's end of its control socket.
type zygoteProc struct {
	cmd    *exec.Cmd
	ctl    *os.File // the control socket, a SOCK_SEQPACKET
	exited chan struct{}
}

// Run is a program a Zygote started.
type Run struct {
	// Pid is the program's pid and process group (0 when it never ran).
	Pid  int
	conn *os.File
	r    *bufio.Reader
	end  *zygoteReply // the end, when it came with the start
	done func()       // tells the Zygote the program is waited for
}

// Start starts argv (argv[0] the program's path) with env and the given
// standard files, confined; it returns once the program runs (or could
// not run: then Run.Pid is 0, and Wait says how it failed, as the helper's
// exit code with its complaint on stderr). A nil stdin is /dev/null.
func (z *Zygote) Start(argv, env []string, stdin, stdout, stderr *os.File) (*Run, error) {
	if stdin == nil {
		var err error
		if stdin, err = z.null(); err != nil {
			return nil, err
		}
	}
	req, err := encodeRequest(argv, env)
	if err != nil {
		return nil, fmt.Errorf("sandbox zygote: %v", err)
	}
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	conn, err := pollable(sp[0], "zygote-call")
	if err != nil {
		syscall.Close(sp[1])
		return nil, err
	}
	run := &Run{conn: conn, r: bufio.NewReader(conn), done: z.started()}
	if err := z.request(conn, sp[1], req, stdin, stdout, stderr); err != nil {
		run.close()
		return nil, fmt.Errorf("sandbox zygote: %v", err)
	}
	rep, err := readReply(run.r)
	if err != nil {
		run.close()
		return nil, fmt.Errorf("sandbox zygote ended before the program started: %v", err)
	}
	if rep.Ended {
		run.end = &rep
		return run, nil
	}
	run.Pid = rep.Pid
	return run, nil
}

// request sends the zygote a call: its socket (theirs, closed here) and
// the program's standard files, with the request inside the control
// message when it fits, else after it on the call's socket.
func (z *Zygote) request(conn *os.File, theirs int, req []byte, stdin, stdout, stderr *os.File) error {
	rights := unix.UnixRights(theirs, int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	follows := len(req) > inlineRequestMax
	var err error
	if !follows {
		// A host whose socket buffers are smaller than the request
		// refuses it (EMSGSIZE): it then follows on the call's socket.
		err = z.send(req, rights)
		follows = errors.Is(err, syscall.EMSGSIZE)
	}
	if follows {
		err = z.send([]byte(requestFollows), rights)
	}
	syscall.Close(theirs)
	if err == nil && follows {
		_, err = conn.Write(append(fmt.Appendf(nil, "%d\n", len(req)), req...))
	}
	return err
}

// send passes a call's message and descriptors to the zygote, starting one
// when none runs, and once more when the running one turns out to have
// died.
func (z *Zygote) send(msg, rights []byte) error {
	for attempt := 0; ; attempt++ {
		zp, err := z.proc()
		if err != nil {
			return err
		}
		err = sendMsg(zp.ctl, msg, rights)
		if err == nil || errors.Is(err, syscall.EMSGSIZE) {
			return err
		}
		z.drop(zp)
		if attempt > 0 {
			return err
		}
	}
}

// Wait waits for the program's end and closes the call. An error means
// the zygote ended first (its programs die with it).
func (r *Run) Wait() (*Exit, error) {
	defer r.close()
	rep := r.end
	if rep == nil {
		got, err := readReply(r.r)
		if err != nil || !got.Ended {
			return nil, fmt.Errorf("sandbox zygote ended before the program: %v", err)
		}
		rep = &got
	}
	return &Exit{Status: syscall.WaitStatus(rep.Status), CPU: time.Duration(rep.CPUNs)}, nil
}

// close closes the call's socket and tells the Zygote, once.
func (r *Run) close() {
	_ = r.conn.Close()
	if r.done != nil {
		r.done()
		r.done = nil
	}
}

// started counts a program as started; the returned func counts it
// waited for, and starts the idle period when it was the last.
func (z *Zygote) started() func() {
	z.mu.Lock()
	z.busy++
	z.mu.Unlock()
	return func() {
		z.mu.Lock()
		defer z.mu.Unlock()
		z.busy--
		if z.busy > 0 || z.cur == nil {
			return
		}
		z.idleSince = time.Now()
		if z.retirer == nil {
			z.retirer = time.AfterFunc(z.idle, z.retireIdle)
		} else {
			z.retirer.Reset(z.idle)
		}
	}
}

// retireIdle ends the zygote when it has had no program for its idle
// period (otherwise it waits for the rest of that period).
func (z *Zygote) retireIdle() {
	z.mu.Lock()
	if z.busy > 0 || z.cur == nil {
		z.mu.Unlock()
		return
	}
	if left := z.idle - time.Since(z.idleSince); left > 0 {
		z.retirer.Reset(left)
		z.mu.Unlock()
		return
	}
	zp := z.cur
	z.cur = nil
	z.mu.Unlock()
	zp.stop()
}

// null is /dev/null, opened the first time.
func (z *Zygote) null() (*os.File, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.devNull == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		z.devNull = f
	}
	return z.devNull, nil
}

// proc returns the running zygote, starting one when none runs.
func (z *Zygote) proc() (*zygoteProc, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.closed {
		return nil, ErrZygoteClosed
	}
	if z.cur != nil {
		select {
		case <-z.cur.exited:
			z.cur.ctl.Close()
			z.cur = nil
		default:
			return z.cur, nil
		}
	}
	zp, err := startZygote(z.plan, z.grace)
	if err != nil {
		return nil, err
	}
	z.cur = zp
	return zp, nil
}

// drop forgets zp (it could not take a call) and ends it.
func (z *Zygote) drop(zp *zygoteProc) {
	z.mu.Lock()
	if z.cur == zp {
		z.cur = nil
	}
	z.mu.Unlock()
	zp.stop()
}

// Close ends the zygote; programs still running are taken down as if the
// worker had died (SIGTERM, SIGKILL after the grace).
func (z *Zygote) Close() error {
	z.mu.Lock()
	z.closed = true
	if z.retirer != nil {
		z.retirer.Stop()
	}
	zp := z.cur
	z.cur = nil
	z.mu.Unlock()
	if zp != nil {
		zp.stop()
	}
	return nil
}

// stop closes the control socket, which the zygote takes as the worker's
// end.
func (zp *zygoteProc) stop() { _ = zp.ctl.Close() }

// startZygote starts pl's helper as a zygote in the plan's namespaces and
// waits for its ready message. It dies with the worker (parent-death
// signal, from a thread kept for it) and takes its programs with it.
func startZygote(pl *Plan, grace time.Duration) (*zygoteProc, error) {
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	theirs := os.NewFile(uintptr(sp[1]), "zygote-control")
	ctl, err := pollable(sp[0], "zygote-control")
	if err != nil {
		theirs.Close()
		return nil, err
	}
	attr := pl.SysProcAttr()
	attr.Setpgid, attr.Pdeathsig = true, syscall.SIGTERM
	cmd := &exec.Cmd{Path: pl.helper, Args: []string{pl.helper, helperFlag, zygoteFlag, pl.spec, grace.String()},
		ExtraFiles: []*os.File{theirs}, SysProcAttr: attr}
	zp := &zygoteProc{cmd: cmd, ctl: ctl, exited: make(chan struct{})}
	err = supervise.Start(cmd, zp.exited)
	theirs.Close()
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("sandbox zygote: cannot start %s: %v", pl.helper, err)
	}
	go func() {
		_ = cmd.Wait()
		close(zp.exited)
	}()
	if err := zp.ready(); err != nil {
		zp.stop()
		_ = cmd.Process.Kill()
		return nil, err
	}
	return zp, nil
}

// ready waits for the zygote's first message.
func (zp *zygoteProc) ready() error {
	_ = zp.ctl.SetReadDeadline(time.Now().Add(zygoteStartTimeout))
	defer zp.ctl.SetReadDeadline(time.Time{})
	b := make([]byte, 4<<10)
	n, err := zp.ctl.Read(b)
	switch {
	case err != nil:
		return fmt.Errorf("sandbox zygote did not start: %v", err)
	case string(b[:n]) == fmt.Sprintf("%s %d", zygoteReady, wireVersion):
		return nil
	case string(b[:n]) == zygoteReady:
		return fmt.Errorf("sandbox zygote did not start: %v", &wireMismatch{got: 1})
	case strings.HasPrefix(string(b[:n]), zygoteReady+" "):
		got, _ := strconv.Atoi(strings.TrimPrefix(string(b[:n]), zygoteReady+" "))
		return fmt.Errorf("sandbox zygote did not start: %v", &wireMismatch{got: got})
	}
	return fmt.Errorf("sandbox zygote did not start: %s", b[:n])
}

// readReply reads one reply line.
func readReply(r *bufio.Reader) (zygoteReply, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return zygoteReply{}, err
	}
	return parseReply(line)
}
