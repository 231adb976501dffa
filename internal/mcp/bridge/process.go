package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolmesh/toolmesh/internal/supervise"
)

// processTransport runs a stdio MCP server the way the worker runs a
// CLI-bound tool: in its own process group, under the supervisor that
// takes the group down when the worker dies (kill -9 included, on Linux),
// and started from a thread kept alive for the parent-death signal. The
// SDK's CommandTransport cannot: it starts the process itself, on any
// thread, and signals only the process, not what it forked.
type processTransport struct {
	path  string
	args  []string
	env   []string
	grace time.Duration
	// confine holds the namespaces and credentials of a sandboxed server
	// (path is then the sandbox helper); nil for an unconfined one.
	confine *syscall.SysProcAttr
	// onProgress and onLog receive each notifications/progress and
	// notifications/message as it is read, in wire order (see
	// processConn.Read).
	onProgress func(*mcp.ProgressNotificationParams)
	onLog      func(*mcp.LoggingMessageParams)
	// defs keeps the server's tool definitions as it sent them.
	defs *toolDefs
}

// Connect starts the server and speaks newline-delimited JSON-RPC over its
// stdin and stdout.
func (t *processTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := supervise.Command(t.path, t.args, t.grace)
	cmd.Env = t.env
	if t.confine != nil {
		confine(cmd.SysProcAttr, t.confine)
	}
	// Pipes of our own: exec's copying goroutines would tie Wait to a
	// grandchild holding stdout open, and Wait would close what the
	// session still reads.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		supervise.CloseAll(stdinR, stdinW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	p := &process{cmd: cmd, exited: make(chan struct{}), grace: t.grace}
	if err := supervise.Start(cmd, p.exited); err != nil {
		supervise.CloseAll(stdinR, stdinW, stdoutR, stdoutW)
		return nil, fmt.Errorf("start %s: %w", t.path, err)
	}
	supervise.CloseAll(stdinR, stdoutW) // the server holds its own copies
	go func() { _ = cmd.Wait(); close(p.exited) }()
	conn, err := (&mcp.IOTransport{Reader: stdoutR, Writer: stdinW}).Connect(ctx)
	if err != nil {
		p.stop()
		return nil, err
	}
	return &processConn{Connection: conn, p: p, onProgress: t.onProgress, onLog: t.onLog, defs: t.defs}, nil
}

// process is one running server's process group.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	grace  time.Duration
	once   sync.Once
}

// stop gives the server the grace to exit after its stdin closed, then
// SIGTERM to the group, the grace again, and SIGKILL to the group, so
// nothing the server forked survives it.
func (p *process) stop() {
	p.once.Do(func() {
		pgid := p.cmd.Process.Pid
		wait := func() {
			t := time.NewTimer(p.grace)
			defer t.Stop()
			select {
			case <-p.exited:
			case <-t.C:
			}
		}
		wait()
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		wait()
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	})
}

// processConn is the session's connection; closing it stops the server.
type processConn struct {
	mcp.Connection
	p          *process
	onProgress func(*mcp.ProgressNotificationParams)
	onLog      func(*mcp.LoggingMessageParams)
	defs       *toolDefs
}

// Write notes a tools/list request, so its answer's tool definitions
// are kept (toolDefs).
func (c *processConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.defs.sent(msg)
	return c.Connection.Write(ctx, msg)
}

// Read hands each progress notification to onProgress, and each log
// message to onLog, as it is read, before the SDK sees the messages
// behind it. The SDK runs notification handlers on a queue but hands a
// response to its caller at once, so a handler would see what a server
// sends just before its result only after the call has returned; read
// here, both keep their wire order and reach the mesh call before its
// result.
func (c *processConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.defs.received(msg)
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || err != nil || req.IsCall() {
		return msg, err
	}
	switch {
	case req.Method == "notifications/progress" && c.onProgress != nil:
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			c.onProgress(&p)
		}
	case req.Method == "notifications/message" && c.onLog != nil:
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) == nil {
			c.onLog(&p)
		}
	}
	return msg, err
}

// Close closes the pipes (the server sees end of input) and stops the
// server's process group. The SDK calls it when a read or write fails
// (the server died) as well as on an orderly close.
func (c *processConn) Close() error {
	err := c.Connection.Close()
	c.p.stop()
	return err
}
