package meshtest

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// Logger returns a logger that writes to t's output (t.Output: shown
// with the test's name for a failed test, or always under -v), so a
// worker's or caller's warnings sit beside the failure they explain.
// Lines logged after t's cleanups have run (by a goroutine that outlived
// the test) are dropped rather than panicking the test binary.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, nil))
}

// testWriter forwards to a test's output until the test ends.
type testWriter struct {
	mu     sync.Mutex
	out    io.Writer
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}
