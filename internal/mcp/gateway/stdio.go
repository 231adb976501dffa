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
// the session reads it through Go's network poller rather than with a
// blocking read (pollableStdin, on Linux): a blocking read holds an OS thread and
// its scheduler slot while the gateway waits for the next request, and
// the runtime's handing that slot back and forth costs each call about a
// NATS round trip's worth of wake-ups on a busy machine.
func (g *Gateway) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	in, done := pollableStdin(r)
	defer done()
	err := g.srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{w}})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// nopReadCloser reads r and leaves it open when the session ends.
type nopReadCloser struct{ io.Reader }

// Close does nothing: the reader outlives the session.
func (nopReadCloser) Close() error { return nil }

// nopWriteCloser writes to w and leaves it open when the session ends.
type nopWriteCloser struct{ io.Writer }

// Close does nothing: the writer outlives the session.
func (nopWriteCloser) Close() error { return nil }
