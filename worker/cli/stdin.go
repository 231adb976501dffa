package cli

import (
	"os"

	"github.com/toolmesh/toolmesh/internal/supervise"
)

// stdinFeed writes one call's stdin data into the program through a pipe
// of its own, so that a grandchild holding stdin open can never block the
// wait for the program (as exec's own copying goroutine would).
type stdinFeed struct {
	r, w    *os.File
	data    []byte
	started bool
	done    chan struct{}
}

// newStdinFeed makes the program's stdin: none (/dev/null) when data is
// nil, else a pipe that start fills.
func newStdinFeed(data []byte) (*stdinFeed, error) {
	f := &stdinFeed{data: data, done: make(chan struct{})}
	if data == nil {
		close(f.done)
		return f, nil
	}
	r, w, err := supervise.InputPipe()
	if err != nil {
		return nil, err
	}
	f.r, f.w = r, w
	return f, nil
}

// reader is the program's end of the pipe (nil: no stdin data).
func (f *stdinFeed) reader() *os.File { return f.r }

// start closes the parent's copy of the read end (the program has its own)
// and writes the data, then end of file. A program that exits without
// reading makes the write fail, which is not an error of the call.
func (f *stdinFeed) start() {
	if f.w == nil {
		return
	}
	_ = f.r.Close()
	f.started = true
	go func() {
		defer close(f.done)
		_, _ = f.w.Write(f.data)
		_ = f.w.Close()
	}()
}

// close releases the pipe: closing the write end unblocks a write the
// program never read, and the feeding goroutine (if the program started)
// is waited for.
func (f *stdinFeed) close() {
	if f.w == nil {
		return
	}
	_ = f.r.Close()
	_ = f.w.Close()
	if f.started {
		<-f.done
	}
}
