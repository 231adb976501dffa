//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"syscall"
)

// waitStop waits for the traced program pid to stop.
func waitStop(pid int) error {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("wait for the program: %v", err)
		}
	}
	if !ws.Stopped() {
		return fmt.Errorf("the program ended before it ran (%v)", describeStatus(ws))
	}
	return nil
}

// describeStatus says how a program ended, as os/exec would.
func describeStatus(ws syscall.WaitStatus) string {
	return (&ExitError{Exit{Status: ws}}).Error()
}
