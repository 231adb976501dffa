//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"syscall"
)

// maxHeldStops bounds the signal stops a held program may make while the
// zygote waits for one of its own stops (its exec, an injected call's
// step): past it, someone keeps signalling the program, and it is killed
// rather than waited on for ever.
const maxHeldStops = 64

// waitStop waits for the traced program pid to stop and returns the
// stop's signal.
func waitStop(pid int) (syscall.Signal, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return 0, fmt.Errorf("wait for the program: %v", err)
		}
	}
	if !ws.Stopped() {
		return 0, fmt.Errorf("the program ended before it ran (%v)", describeStatus(ws))
	}
	return ws.StopSignal(), nil
}

// awaitExec waits for the traced program pid to stop at its exec (the
// SIGTRAP the exec raises). A signal sent to it before (any process of
// the same user may send one) stops it first: that signal is held, not
// delivered, and returned, for the caller to queue again once the
// program is confined (queueAgain).
func awaitExec(pid int) ([]syscall.Signal, error) {
	var held []syscall.Signal
	for range maxHeldStops {
		sig, err := waitStop(pid)
		if err != nil || sig == syscall.SIGTRAP {
			return held, err
		}
		held = append(held, sig)
		if err := syscall.PtraceCont(pid, 0); err != nil {
			return held, fmt.Errorf("ptrace cont: %v", err)
		}
	}
	return held, fmt.Errorf("the program was signalled %d times before its exec", maxHeldStops)
}

// queueAgain sends the program pid, still held, the signals held from it:
// it gets them once it is let go, confined.
func queueAgain(pid int, held []syscall.Signal) error {
	for _, sig := range held {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("queue %v again: %v", sig, err)
		}
	}
	return nil
}

// describeStatus says how a program ended, as os/exec would.
func describeStatus(ws syscall.WaitStatus) string {
	return (&ExitError{Exit{Status: ws}}).Error()
}
