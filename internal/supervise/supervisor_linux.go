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

	"golang.org/x/sys/unix"
)

// sentinelScript is the one watchdog process of a Supervisor. It sleeps
// in a read of its stdin, a pipe nobody writes to; end of file there means
// the worker is gone (a kill -9 closes the worker's end too). It then reads
// the table of live process groups (fd 3, which the worker keeps up to
// date) and does what the worker would have: SIGTERM to every group, up to
// the kill grace for them to empty, then SIGKILL to what is left,
// grandchildren included. It ignores the signals a terminal or a service
// manager sends the worker's own group, so that it outlives a graceful
// worker shutdown long enough to see the end of file.
const sentinelScript = `trap '' TERM INT HUP
while read -r _; do :; done
g=
while read -r p; do [ -n "$p" ] && g="$g $p"; done <&3
[ -z "$g" ] && exit 0
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

// slotSize is the size of one record of the table of live groups: a
// process group id right-aligned in 10 columns and a newline, or 10 blanks
// and a newline for a free slot (Linux pids have at most 7 digits).
const slotSize = 11

// ErrClosed is Start's error once the Supervisor is closed.
var ErrClosed = errors.New("supervise: supervisor closed")

// Supervisor starts programs so that none of them, nor anything they fork,
// outlives the worker, at the cost of one plain fork and exec per program
// (a shell supervisor per program doubled the cost of a short-lived tool).
//
// Each program leads a process group of its own. The Supervisor keeps a
// table of the live groups in an anonymous in-memory file (memfd), one
// fixed-size record per group, rewritten in place with one pwrite when a
// group starts and when it is released: no other process is woken for it.
// One long-lived sentinel process per Supervisor holds that file and reads
// it only when the worker has died, to take the groups down. The kernel's
// parent-death signal (SIGTERM) on the program itself covers the instant
// between its fork and its record; as Linux sends it when the forking
// thread exits, not the process, the goroutine that calls Start stays
// locked to its thread until it calls Release. It is safe for concurrent
// use.
type Supervisor struct {
	grace time.Duration
	// minSentinelAge is how long a sentinel must have run to be replaced
	// at once when it dies.
	minSentinelAge time.Duration

	mu      sync.Mutex
	closed  bool
	table   *os.File // the memfd of live groups, opened with the first sentinel
	devNull *os.File // every program's stdin unless it has one: opened once, not per call
	watch   *sentinel
	slots   map[int]int64 // group → its record's offset in table
	free    []int64       // offsets of free records
	size    int64         // the table's length
}

// NewSupervisor returns a Supervisor whose sentinel gives programs grace
// between SIGTERM and SIGKILL when the worker dies. Nothing starts until
// the first program does.
func NewSupervisor(grace time.Duration) *Supervisor {
	return &Supervisor{grace: grace, slots: make(map[int]int64), minSentinelAge: time.Second}
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
	s.record(pgid)
	return nil
}

// Release tells the Supervisor that group pgid is gone (its program was
// waited for and the group swept) and unlocks the goroutine that started
// it, which must be the caller.
func (s *Supervisor) Release(pgid int) {
	s.Untrack(pgid)
	runtime.UnlockOSThread()
}

// Track puts group pgid, whose leader another process started (a sandbox
// zygote's program), under the Supervisor's watch: if the worker dies
// before Untrack, the sentinel takes the group down.
func (s *Supervisor) Track(pgid int) error {
	if _, err := s.ensureSentinel(); err != nil {
		return err
	}
	s.record(pgid)
	return nil
}

// Untrack tells the Supervisor that group pgid is gone.
func (s *Supervisor) Untrack(pgid int) {
	s.mu.Lock()
	off, ok := s.slots[pgid]
	delete(s.slots, pgid)
	table := s.table
	s.mu.Unlock()
	if ok {
		_, _ = table.WriteAt(appendRecord(make([]byte, 0, slotSize), 0), off)
		s.mu.Lock()
		s.free = append(s.free, off)
		s.mu.Unlock()
	}
}

// record writes group pgid into a free record of the table.
func (s *Supervisor) record(pgid int) {
	s.mu.Lock()
	var off int64
	if n := len(s.free); n > 0 {
		off, s.free = s.free[n-1], s.free[:n-1]
	} else {
		off, s.size = s.size, s.size+slotSize
	}
	s.slots[pgid] = off
	table := s.table
	s.mu.Unlock()
	// A failed write (the table is in memory) would leave the group to the
	// parent-death signal alone; there is nobody to report it to.
	_, _ = table.WriteAt(appendRecord(make([]byte, 0, slotSize), pgid), off)
}

// appendRecord appends pgid's record (a free one for 0) to b.
func appendRecord(b []byte, pgid int) []byte {
	n := len(b)
	b = append(b, "          \n"...)
	if pgid > 0 {
		id := strconv.Itoa(pgid)
		copy(b[n+slotSize-1-len(id):], id)
	}
	return b
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
// or the last sentinel died; the table outlives it, so its successor
// knows every live group). It returns /dev/null, which, like the table,
// stays open once opened: a program may be starting with it at any time.
func (s *Supervisor) ensureSentinel() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.watch != nil {
		return s.devNull, nil
	}
	if err := s.openFiles(); err != nil {
		return nil, err
	}
	w, err := startSentinel(s.grace, s.table, s.onSentinelExit)
	if err != nil {
		return nil, fmt.Errorf("supervise: cannot start the sentinel: %w", err)
	}
	s.watch = w
	return s.devNull, nil
}

// openFiles opens the table and /dev/null the first time.
func (s *Supervisor) openFiles() error {
	if s.table == nil {
		fd, err := unix.MemfdCreate("toolmesh-groups", unix.MFD_CLOEXEC)
		if err != nil {
			return fmt.Errorf("supervise: cannot create the table of groups: %w", err)
		}
		s.table = os.NewFile(uintptr(fd), "toolmesh-groups")
	}
	if s.devNull == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		s.devNull = f
	}
	return nil
}

// onSentinelExit replaces a sentinel that died while the Supervisor was
// open and programs run, at once (the table outlives it, so its successor
// knows every live group) unless it died younger than minSentinelAge: a
// sentinel that cannot run must not be restarted in a loop. Otherwise the
// next Start starts one.
func (s *Supervisor) onSentinelExit(w *sentinel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch != w {
		return
	}
	s.watch = nil
	if s.closed || len(s.slots) == 0 || time.Since(w.started) < s.minSentinelAge {
		return
	}
	if next, err := startSentinel(s.grace, s.table, s.onSentinelExit); err == nil {
		s.watch = next
	}
}

// sentinel is a running sentinel process and the write end of its stdin,
// which only ever closes.
type sentinel struct {
	cmd     *exec.Cmd
	w       *os.File
	started time.Time
}

// startSentinel starts a sentinel with grace that reads table when the
// worker dies; onExit runs if it ends.
func startSentinel(grace time.Duration, table *os.File, onExit func(*sentinel)) (*sentinel, error) {
	polls := max(int(grace/(50*time.Millisecond)), 1)
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(sentinelScript, polls), "toolmesh-sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = []*os.File{table}
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
	sn := &sentinel{cmd: cmd, w: w, started: time.Now()}
	go func() {
		_ = cmd.Wait()
		onExit(sn)
	}()
	return sn, nil
}

// stop closes the pipe, which the sentinel takes as the worker's end.
func (sn *sentinel) stop() { CloseAll(sn.w) }
