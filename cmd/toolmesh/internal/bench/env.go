package bench

import (
	"context"
	"io"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/toolmesh/toolmesh/mesh"
)

// Env is what the bench takes from the toolmesh command it runs under: the
// way to the mesh, the global flags it passes on to the processes it starts
// (the memory row's worker and caller, `toolmesh mcp` for the gateway rows),
// and the standard streams. The bench imports nothing of the command, so
// the command can hold it without a circle.
type Env struct {
	// Dial connects to the mesh named by the global flags; name tells the
	// connection apart on the server.
	Dial func(ctx context.Context, name string) (*nats.Conn, error)
	// Connect and NKey are the global connection flags, Prefix the mesh's
	// subject prefix; the bench's own processes get them again.
	Connect mesh.ConnectOptions
	NKey    string
	Prefix  string
	// Log is the command's logger, for the workers and callers the bench
	// starts.
	Log *slog.Logger

	Stdin          io.Reader
	Stdout, Stderr io.Writer
}
