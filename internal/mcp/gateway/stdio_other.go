//go:build !linux

package gateway

import "io"

// pollableStdin reads r as it is and never closes it: outside Linux a
// pipe is not always safe to poll (kqueue misses a FIFO's last writer
// closing it).
func pollableStdin(r io.Reader) (io.ReadCloser, func()) {
	return io.NopCloser(r), func() {}
}
