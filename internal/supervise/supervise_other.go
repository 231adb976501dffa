//go:build !linux

package supervise

import (
	"os/exec"
	"syscall"
	"time"
)

// Command builds the command for argv in its own process group. Without
// Linux's parent-death signal a kill -9 of the worker can orphan the tool;
// everything else (cancel, timeout, output cap) still stops the group.
func Command(path string, args []string, _ time.Duration) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Start starts cmd.
func Start(cmd *exec.Cmd, _ <-chan struct{}) error { return cmd.Start() }
