//go:build linux

package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolmesh/toolmesh/internal/testutil"
)

// forker is a started program that forked a grandchild.
type forker struct {
	cmd        *exec.Cmd
	grandchild int
	waited     chan error
}

// startForker starts script (which must print a grandchild's pid on its
// first line) under s and makes sure nothing of it outlives the test.
func startForker(t *testing.T, s *Supervisor, script string) *forker {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(cmd); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	gc, convErr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || convErr != nil {
		t.Fatalf("no grandchild pid: %q %v", line, err)
	}
	f := &forker{cmd: cmd, grandchild: gc, waited: make(chan error, 1)}
	go func() { f.waited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = syscall.Kill(gc, syscall.SIGKILL)
	})
	return f
}

// release waits for f's program, sweeps its group and releases it, as a
// caller of Start does.
func (f *forker) release(s *Supervisor) {
	<-f.waited
	_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
	s.Release(f.cmd.Process.Pid)
}

func (f *forker) gone() bool {
	return !testutil.ProcAlive(f.cmd.Process.Pid) && !testutil.ProcAlive(f.grandchild)
}

// watchPid is the pid of s's sentinel, 0 when none runs.
func watchPid(s *Supervisor) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watch == nil {
		return 0
	}
	return s.watch.cmd.Process.Pid
}

const sleeper = `sleep 1000 & echo $!; wait`

// The end of the sentinel's pipe (what a kill -9 of the worker causes, and
// Close) takes down every group not released, grandchildren included.
func TestSentinelTakesDownLiveGroups(t *testing.T) {
	s := NewSupervisor(100 * time.Millisecond)
	f := startForker(t, s, sleeper)
	if f.gone() {
		t.Fatal("program not running before Close")
	}
	_ = s.Close()
	testutil.WaitFor(t, "the program and its grandchild to be gone", f.gone)
	f.release(s)
}

// A group that ignores SIGTERM gets SIGKILL once the grace has passed.
func TestSentinelKillsWhatIgnoresSigterm(t *testing.T) {
	s := NewSupervisor(100 * time.Millisecond)
	f := startForker(t, s, `trap '' TERM; `+sleeper)
	_ = s.Close()
	testutil.WaitFor(t, "the group to be killed after the grace", f.gone)
	if err := <-f.waited; !strings.Contains(fmt.Sprint(err), "killed") {
		t.Fatalf("program ended with %v, want killed by SIGKILL", err)
	}
	f.waited <- nil
	f.release(s)
}

// Released groups leave the sentinel's list: the sentinel must not signal
// them (their ids may be reused), while the groups around them still go.
func TestSentinelForgetsReleasedGroups(t *testing.T) {
	s := NewSupervisor(100 * time.Millisecond)
	var fs []*forker
	for range 3 {
		fs = append(fs, startForker(t, s, sleeper))
	}
	kept := fs[1]
	// Release the middle one while it still runs: the sentinel now
	// believes it gone, so Close must leave it alone.
	s.Release(kept.cmd.Process.Pid)
	sentinelPid := watchPid(s)
	_ = s.Close()
	testutil.WaitFor(t, "the other groups to be gone", func() bool { return fs[0].gone() && fs[2].gone() })
	testutil.WaitFor(t, "the sentinel to exit", func() bool { return !testutil.ProcAlive(sentinelPid) })
	if !testutil.ProcAlive(kept.cmd.Process.Pid) || !testutil.ProcAlive(kept.grandchild) {
		t.Fatal("the sentinel signalled a group that had been released")
	}
	fs[0].release(s)
	fs[2].release(s)
}

// A sentinel that dies young is replaced at the next start, and its
// successor takes over the groups still live.
func TestSentinelReplacedAfterDeath(t *testing.T) {
	s := NewSupervisor(100 * time.Millisecond)
	s.minSentinelAge = time.Hour // never at once: this is the lazy path
	first := startForker(t, s, sleeper)
	old := watchPid(s)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the supervisor to see its sentinel die", func() bool { return watchPid(s) == 0 })
	second := startForker(t, s, sleeper)
	if watchPid(s) == old {
		t.Fatal("no new sentinel")
	}
	_ = s.Close()
	testutil.WaitFor(t, "both groups to be gone", func() bool { return first.gone() && second.gone() })
	second.release(s)
	first.release(s)
}

// A sentinel that dies while programs run is replaced at once, without
// waiting for another start.
func TestSentinelReplacedAtOnce(t *testing.T) {
	s := NewSupervisor(100 * time.Millisecond)
	s.minSentinelAge = 0
	f := startForker(t, s, sleeper)
	old := watchPid(s)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a new sentinel", func() bool { pid := watchPid(s); return pid != 0 && pid != old })
	_ = s.Close()
	testutil.WaitFor(t, "the group to be gone", f.gone)
	f.release(s)
}

func TestStartAfterClose(t *testing.T) {
	s := NewSupervisor(time.Second)
	_ = s.Close()
	if err := s.Start(exec.Command("/bin/true")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}
