//go:build !linux

package supervise

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrClosed is Start's error once the Supervisor is closed.
var ErrClosed = errors.New("supervise: supervisor closed")

// Supervisor starts programs in process groups of their own. Without
// Linux's parent-death signal a kill -9 of the worker can orphan them;
// everything else (cancel, timeout, output cap) still stops the group.
type Supervisor struct {
	mu     sync.Mutex
	closed bool
}

// NewSupervisor returns a Supervisor; grace is unused off Linux.
func NewSupervisor(time.Duration) *Supervisor { return &Supervisor{} }

// Start starts cmd in a process group of its own.
func (s *Supervisor) Start(cmd *exec.Cmd) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return cmd.Start()
}

// Release tells the Supervisor that group pgid is gone.
func (s *Supervisor) Release(int) {}

// Track would watch a group another process started; off Linux nothing
// watches groups.
func (s *Supervisor) Track(int) error { return nil }

// Untrack tells the Supervisor that group pgid is gone.
func (s *Supervisor) Untrack(int) {}

// Close stops taking programs.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}
