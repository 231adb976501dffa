package gateway

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pollableStdin returns what a stdio session reads r through, and what to
// call when the session has ended. A pipe or socket in blocking mode is
// read through a duplicate of its descriptor set non-blocking, which the
// Go runtime waits on in its network poller: a waiting read then holds no
// thread, and closing the duplicate (the session does) ends it. done
// closes the duplicate too, should the session not have, and puts the
// blocking mode back, as the mode belongs to the open file r shares.
// Anything else (a terminal, a regular file, a file the poller has
// already, a reader that is no file) is read as it is and never closed.
func pollableStdin(r io.Reader) (io.ReadCloser, func()) {
	as, none := io.NopCloser(r), func() {}
	f, ok := r.(*os.File)
	if !ok || f.SetReadDeadline(time.Time{}) == nil { // no file, or polled already
		return as, none
	}
	raw, err := f.SyscallConn() // not Fd, which may change the file's mode
	if err != nil {
		return as, none
	}
	fd, dup := -1, -1
	_ = raw.Control(func(d uintptr) {
		if pipeOrSocket(int(d)) {
			fd = int(d)
			dup, _ = unix.FcntlInt(d, unix.F_DUPFD_CLOEXEC, 0)
		}
	})
	if dup < 0 {
		return as, none
	}
	restore := func() { _ = unix.SetNonblock(fd, false) }
	if unix.SetNonblock(dup, true) != nil {
		_ = unix.Close(dup)
		return as, none
	}
	in := os.NewFile(uintptr(dup), f.Name())
	// Only a file the poller took has deadlines; one it refused would
	// fail its reads with EAGAIN.
	if in.SetReadDeadline(time.Time{}) != nil {
		_ = in.Close()
		restore()
		return as, none
	}
	return in, func() { _ = in.Close(); restore() }
}

// pipeOrSocket reports whether fd is a pipe or socket in blocking mode.
func pipeOrSocket(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
		return false
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	return err == nil && flags&unix.O_NONBLOCK == 0
}
