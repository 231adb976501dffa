//go:build linux

package sandbox

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The control socket is used through os.File and raw sendmsg/recvmsg
// rather than package net, which would link the C resolver (and with it
// cgo's thread creation) into the helper.

// sendMsg sends b with oob on the packet socket f (non-blocking, in the
// runtime's poller), waiting while the socket is full.
func sendMsg(f *os.File, b, oob []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, oob, nil, 0)
		return !errors.Is(serr, syscall.EAGAIN)
	})
	if err != nil {
		return err
	}
	return serr
}

// recvMsg receives one message on the packet socket f into b and oob,
// waiting for one; received descriptors are close-on-exec. n is 0 at the
// end of the socket.
func recvMsg(f *os.File, b, oob []byte) (n, oobn int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), b, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, syscall.EAGAIN)
	})
	if err != nil {
		return 0, 0, err
	}
	return n, oobn, rerr
}

// pollable wraps descriptor fd as a non-blocking os.File in the runtime's
// poller (so that Close interrupts a read, and deadlines work).
func pollable(fd int, name string) (*os.File, error) {
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}
