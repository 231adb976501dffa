//go:build linux

package supervise

import (
	"os"
	"syscall"
)

// OutputPipe is a pipe for a program's output: the parent reads r
// through the runtime's poller, the program gets w. Unlike os.Pipe, the
// program's end is never registered with the poller, so each call saves
// an epoll add and delete and the program gets a blocking descriptor, as
// programs expect.
func OutputPipe() (r, w *os.File, err error) {
	return pipe(true)
}

// InputPipe is a pipe for a program's input: the program gets r, the
// parent writes w through the runtime's poller.
func InputPipe() (r, w *os.File, err error) {
	return pipe(false)
}

func pipe(parentReads bool) (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	parent := fds[1]
	if parentReads {
		parent = fds[0]
	}
	if err := syscall.SetNonblock(parent, true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	// os.NewFile puts a non-blocking descriptor in the poller and leaves
	// a blocking one out of it.
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
