//go:build linux

package supervise

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// sentinelScript is the one watchdog process of a Supervisor. The worker
// writes "+ PGID" to its stdin when a program starts in group PGID and
// "- PGID" once that group is gone; end of file on stdin means the worker
// is gone (a kill -9 closes its end of the pipe too), and the sentinel then
// does what the worker would have: SIGTERM to every group it still holds,
// up to the kill grace for them to empty, then SIGKILL to what is left,
// grandchildren included. It ignores the signals a terminal or a service
// manager sends the worker's own group, so that it outlives a graceful
// worker shutdown long enough to see the end of file.
const sentinelScript = `trap '' TERM INT HUP
g=' '
while read -r op p; do
	case $op in
	+) g="$g$p " ;;
	-) case $g in *" $p "*) g="${g%% $p *} ${g#* $p }" ;; esac ;;
	esac
done
[ "$g" = ' ' ] && exit 0
for p in $g; do kill -TERM -"$p" 2>/dev/null; done
i=0
while [ $i -lt %d ]; do
	alive=
	for p in $g; do kill -0 -"$p" 2>/dev/null && alive=1; done
	[ -z "$alive" ] && exit 0
	sleep 0.05
	i=$((i+1))
done
for p in $g; do kill -KILL -"$p" 2>/dev/null; done`

// ErrClosed is Start's error once the Supervisor is closed.
var ErrClosed = errors.New("supervise: supervisor closed")

// Supervisor starts programs so that none of them, nor anything they fork,
// outlives the worker, at the cost of one plain fork and exec per program
// (a shell supervisor per program doubled the cost of a short-lived tool).
// Each program leads a process group of its own; one long-lived sentinel
// process per Supervisor holds the list of live groups and takes them down
// when the worker dies. The kernel's parent-death signal (SIGTERM) on the
// program itself covers the instant between its fork and its group's
// registration with the sentinel; as Linux sends it when the forking
// thread exits, not the process, the goroutine that calls Start stays
// locked to its thread until it calls Release. It is safe for concurrent
// use.
type Supervisor struct {
	grace time.Duration

	mu       sync.Mutex
	closed   bool
	watch    *sentinel
	devNull  *os.File         // every program's stdin unless it has one: opened once, not per call
	live     map[int]struct{} // the groups of programs not yet released
	pending  []byte           // "- PGID" lines not yet sent to the sentinel
	flushing bool             // a flush of pending is scheduled
}

// releaseFlush is how long a released group may stay on the sentinel's
// list when no program starts meanwhile: releases ride along with the next
// start's line (one pipe write and one sentinel wake-up per call instead
// of two), and a quiet worker still clears them out soon, so that the
// sentinel never holds a group id long enough for the system to reuse it.
const releaseFlush = 100 * time.Millisecond

// NewSupervisor returns a Supervisor whose sentinel gives programs grace
// between SIGTERM and SIGKILL when the worker dies. Nothing starts until
// the first program does.
func NewSupervisor(grace time.Duration) *Supervisor {
	return &Supervisor{grace: grace, live: make(map[int]struct{})}
}

// Start starts cmd in a process group of its own (its pid is the group's
// id) under the Supervisor's watch. On success the calling goroutine is
// locked to its OS thread: it waits for cmd as usual, sweeps the group,
// then calls Release(cmd.Process.Pid) itself, which unlocks it.
func (s *Supervisor) Start(cmd *exec.Cmd) error {
	devNull, err := s.ensureSentinel()
	if err != nil {
		return err
	}
	if cmd.Stdin == nil {
		cmd.Stdin = devNull
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	runtime.LockOSThread()
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	pgid := cmd.Process.Pid
	s.mu.Lock()
	s.live[pgid] = struct{}{}
	lines, watch := appendLine(s.pending, '+', pgid), s.watch
	s.pending = nil
	s.mu.Unlock()
	if watch != nil {
		watch.send(lines)
	}
	return nil
}

// Release tells the Supervisor that group pgid is gone (its program was
// waited for and the group swept) and unlocks the goroutine that started
// it, which must be the caller.
func (s *Supervisor) Release(pgid int) {
	s.mu.Lock()
	if _, ok := s.live[pgid]; ok {
		delete(s.live, pgid)
		s.pending = appendLine(s.pending, '-', pgid)
		if !s.flushing {
			s.flushing = true
			time.AfterFunc(releaseFlush, s.flush)
		}
	}
	s.mu.Unlock()
	runtime.UnlockOSThread()
}

// flush sends the releases no start has carried to the sentinel.
func (s *Supervisor) flush() {
	s.mu.Lock()
	s.flushing = false
	lines, watch := s.pending, s.watch
	s.pending = nil
	s.mu.Unlock()
	if watch != nil {
		watch.send(lines)
	}
}

// Close stops taking programs and ends the sentinel, which takes down any
// group not yet released.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closed = true
	watch := s.watch
	s.watch = nil
	s.mu.Unlock()
	if watch != nil {
		watch.stop()
	}
	return nil
}

// ensureSentinel starts a sentinel whenever none runs (the first program,
// or the last sentinel died) and hands it the live groups. It returns
// /dev/null, opened with the first sentinel and kept open (a program may
// be starting with it at any time; the garbage collector closes it).
func (s *Supervisor) ensureSentinel() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.watch != nil {
		return s.devNull, nil
	}
	if s.devNull == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		s.devNull = f
	}
	w, err := startSentinel(s.grace, s.onSentinelExit)
	if err != nil {
		return nil, fmt.Errorf("supervise: cannot start the sentinel: %w", err)
	}
	var lines []byte
	for pgid := range s.live {
		lines = appendLine(lines, '+', pgid)
	}
	w.send(lines)
	s.pending = nil
	s.watch = w
	return s.devNull, nil
}

// onSentinelExit forgets a sentinel that died while the Supervisor was
// open; the next Start starts another and hands it the live groups.
func (s *Supervisor) onSentinelExit(w *sentinel) {
	s.mu.Lock()
	if s.watch == w {
		s.watch = nil
	}
	s.mu.Unlock()
}

// sentinel is a running sentinel process and the pipe to its stdin.
type sentinel struct {
	cmd *exec.Cmd
	mu  sync.Mutex // one write at a time: lines never interleave
	w   *os.File
}

// startSentinel starts a sentinel with grace; onExit runs if it ends.
func startSentinel(grace time.Duration, onExit func(*sentinel)) (*sentinel, error) {
	polls := max(int(grace/(50*time.Millisecond)), 1)
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(sentinelScript, polls), "toolmesh-sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = r
	err = cmd.Start()
	CloseAll(r)
	if err != nil {
		CloseAll(w)
		return nil, err
	}
	sn := &sentinel{cmd: cmd, w: w}
	go func() {
		_ = cmd.Wait()
		onExit(sn)
	}()
	return sn, nil
}

// appendLine appends the sentinel's line "OP PGID" to b.
func appendLine(b []byte, op byte, pgid int) []byte {
	b = append(b, op, ' ')
	b = strconv.AppendInt(b, int64(pgid), 10)
	return append(b, '\n')
}

// send writes whole lines to the sentinel. A sentinel that died makes it
// fail; the Supervisor then starts another.
func (sn *sentinel) send(lines []byte) {
	if len(lines) == 0 {
		return
	}
	sn.mu.Lock()
	_, _ = sn.w.Write(lines)
	sn.mu.Unlock()
}

// stop closes the pipe, which the sentinel takes as the worker's end.
func (sn *sentinel) stop() { CloseAll(sn.w) }
