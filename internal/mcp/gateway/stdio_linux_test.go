package gateway

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe in blocking mode, as a parent process hands
// its child stdin (os.Pipe's ends are non-blocking already).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdin writer")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := raw.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return flags&unix.O_NONBLOCK != 0
}

func TestPollableStdinReadsAPipeThroughThePoller(t *testing.T) {
	r, w := blockingPipe(t)
	in, done := pollableStdin(r)
	if in == io.NopCloser(r) {
		t.Fatal("a blocking pipe is read as it is, want a pollable duplicate")
	}
	f, ok := in.(*os.File)
	if !ok {
		t.Fatalf("a pipe is read through %T, want an *os.File", in)
	}
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		t.Fatalf("the duplicate is not in the poller: %v", err)
	}
	if _, err := w.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := in.Read(buf); err != nil || string(buf[:n]) != "{}\n" {
		t.Fatalf("read %q, %v; want the line written", buf[:n], err)
	}
	// A read waiting for the next request ends when the session closes
	// its reader, as a blocking read of stdin would not.
	ended := make(chan error, 1)
	go func() { _, err := in.Read(buf); ended <- err }()
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the waiting read ended with %v, want os.ErrClosed", err)
	}
	done()
	if nonblocking(t, r) {
		t.Fatal("stdin stays non-blocking after the session")
	}
	// stdin itself stays open: the process may still read it.
	if _, err := w.WriteString("more\n"); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "more\n" {
		t.Fatalf("stdin after the session read %q, %v", buf[:n], err)
	}
}

func TestPollableStdinLeavesOtherReadersAsTheyAre(t *testing.T) {
	src := strings.NewReader("{}\n")
	in, done := pollableStdin(src)
	defer done()
	if in != io.NopCloser(src) {
		t.Fatalf("a reader that is no file became %T", in)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(src); err != nil || string(b) != "{}\n" {
		t.Fatalf("closing the session's reader touched the source: %q, %v", b, err)
	}
	// os.Pipe's ends are in the poller already: read as they are.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if in, _ := pollableStdin(pr); in != io.NopCloser(pr) {
		t.Fatalf("an already non-blocking pipe became %T", in)
	}
	if !nonblocking(t, pr) {
		t.Fatal("a polled pipe was set to blocking mode")
	}
}
