package sandbox

import (
	"fmt"
	"syscall"
	"time"
)

// Exit is how a confined program ended: its wait status and the CPU time
// it used.
type Exit struct {
	Status syscall.WaitStatus
	CPU    time.Duration
}

// ExitCode is the program's exit code, or -1 when a signal ended it.
func (e *Exit) ExitCode() int {
	if e.Status.Exited() {
		return e.Status.ExitStatus()
	}
	return -1
}

// ExitError is the error of a confined program that did not exit 0.
type ExitError struct{ Exit }

// Error says how the program ended, as os/exec's ExitError does.
func (e *ExitError) Error() string {
	if e.Status.Signaled() {
		return "signal: " + e.Status.Signal().String()
	}
	return fmt.Sprintf("exit status %d", e.ExitCode())
}
