package gateway

import (
	"context"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one MCP session over r and w (newline-delimited
// JSON-RPC) until the client closes r or ctx ends. It closes neither:
// a process's stdin and stdout outlive the session.
//
// When r is a pipe or socket (how an MCP host starts a stdio server),
// the session reads it through Go's network poller (pollableStdin, on
// Linux) rather than with a blocking read, which holds an OS thread in
// the kernel while the gateway waits for the next request: the runtime
// then hands the thread's scheduler slot back and forth around every
// request, costing each call 40-200 µs on a busy two-core machine.
func (g *Gateway) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	in, done := pollableStdin(r)
	defer done()
	err := g.srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{w}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nopWriteCloser writes to w and leaves it open when the session ends.
type nopWriteCloser struct{ io.Writer }

// Close does nothing: the writer outlives the session.
func (nopWriteCloser) Close() error { return nil }
