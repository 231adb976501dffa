package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolmesh/toolmesh/envelope"
)

// The peers a user would pick instead of the mesh, hosted in this process
// beside it and doing the same echo and the same stream of deltas: an MCP
// server on the official Go SDK over streamable HTTP (both protocol
// revisions the SDK serves), and a gRPC service on grpc-go whose messages
// are JSON (a codec forced on the server and the connection, so that no
// protoc step and no global codec registry are needed).
const (
	peerRaw   = "raw"
	peerMicro = "micro"
	// peerMicroConfirm is micro paying the pickup confirmation's round
	// trip before each reply (bencher.serveMicro).
	peerMicroConfirm = "micro+confirm"
	peerMCPHTTP      = "mcp-http"
	peerMCPStateles  = "mcp-http-stateless"
	peerGRPC         = "grpc"

	mcpSessionRevision   = "2025-11-25"
	mcpStatelessRevision = "2026-07-28"
)

// benchPeers holds the MCP and gRPC servers and their clients.
type benchPeers struct {
	deltas    int
	httpSrv   *http.Server
	mcpStates *mcp.ClientSession // 2025-11-25, with a session
	mcpNoSess *mcp.ClientSession // 2026-07-28, stateless
	grpcSrv   *grpc.Server
	grpcConn  *grpc.ClientConn
	args      echoMessage

	// progress maps a call's progress token to its waiter.
	progress sync.Map
	tokens   atomic.Int64
}

// echoMessage is the echo tool's input and output on every peer.
type echoMessage struct {
	Message string `json:"message"`
}

// countMessage is one event of a peer's stream.
type countMessage struct {
	I int `json:"i"`
}

// newBenchPeers starts both servers on loopback ports of the system's
// choosing and connects their clients, each with enough idle connections
// for maxInFlight calls (net/http keeps two per host by default, which
// would have the MCP side dial a connection per call).
func newBenchPeers(ctx context.Context, maxInFlight, payload, deltas int) (_ *benchPeers, err error) {
	p := &benchPeers{deltas: deltas}
	p.args.Message = strings.Repeat("x", payload)
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if err := p.startMCP(ctx, maxInFlight); err != nil {
		return nil, err
	}
	if err := p.startGRPC(); err != nil {
		return nil, err
	}
	return p, nil
}

// startMCP serves echo and count over streamable HTTP the way the SDK's
// documentation and toolmesh's own gateway do: a stateless handler for
// 2026-07-28 requests, a session handler for the rest.
func (p *benchPeers) startMCP(ctx context.Context, maxInFlight int) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "toolmesh-bench-peer", Version: "0.0.1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoMessage) (*mcp.CallToolResult, echoMessage, error) {
		return nil, in, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "count"}, p.mcpCount)
	get := func(*http.Request) *mcp.Server { return s }
	stateful := mcp.NewStreamableHTTPHandler(get, nil)
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return envelope.Problemf(envelope.CodeInternal, "cannot listen for the MCP peer: %v", err)
	}
	p.httpSrv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= mcpStatelessRevision {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})}
	go func() { _ = p.httpSrv.Serve(ln) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolmesh-bench", Version: "0.0.1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: p.onProgress})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: maxInFlight + 8, MaxIdleConnsPerHost: maxInFlight + 8}}
	endpoint := "http://" + ln.Addr().String()
	for _, x := range []struct {
		into    **mcp.ClientSession
		version string
	}{{&p.mcpStates, mcpSessionRevision}, {&p.mcpNoSess, mcpStatelessRevision}} {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: x.version})
		if err != nil {
			return envelope.Problemf(envelope.CodeConnectionLost, "cannot connect to the MCP peer (%s): %v", x.version, err)
		}
		*x.into = cs
		if got := cs.InitializeResult().ProtocolVersion; got != x.version {
			return envelope.Problemf(envelope.CodeInternal, "the MCP peer negotiated %s, want %s", got, x.version)
		}
	}
	return nil
}

// mcpCount sends p.deltas progress notifications, MCP's way of streaming
// events of one call, then its result.
func (p *benchPeers) mcpCount(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]int, error) {
	tok := req.Params.GetProgressToken()
	for i := range p.deltas {
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1)}); err != nil {
			return nil, nil, err
		}
	}
	return nil, map[string]int{"count": p.deltas}, nil
}

// progressWait counts one call's progress notifications.
type progressWait struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (p *benchPeers) onProgress(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	v, ok := p.progress.Load(r.Params.ProgressToken)
	if !ok {
		return
	}
	w := v.(*progressWait)
	if w.n.Add(1) == w.want {
		close(w.done)
	}
}

// mcpEcho calls echo on one of the MCP sessions.
func (p *benchPeers) mcpEcho(ctx context.Context, cs *mcp.ClientSession) error {
	return callEcho(ctx, cs, p.args, "the MCP peer's echo")
}

// mcpStream calls count and waits for its every progress notification:
// the SDK may hand a notification to its handler after the result.
func (p *benchPeers) mcpStream(ctx context.Context, cs *mcp.ClientSession) error {
	tok := "c" + strconv.FormatInt(p.tokens.Add(1), 10)
	w := &progressWait{want: int64(p.deltas), done: make(chan struct{})}
	p.progress.Store(tok, w)
	defer p.progress.Delete(tok)
	params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{}}
	params.SetProgressToken(tok)
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("the MCP peer's count failed: %s", contentText(res.Content))
	}
	select {
	case <-w.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the MCP peer delivered %d of %d progress notifications", w.n.Load(), p.deltas)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *bencher) mcpUnary(ctx context.Context) error { return b.peers.mcpEcho(ctx, b.peers.mcpStates) }

func (b *bencher) mcpStatelessUnary(ctx context.Context) error {
	return b.peers.mcpEcho(ctx, b.peers.mcpNoSess)
}

func (b *bencher) mcpStream(ctx context.Context) error {
	return b.peers.mcpStream(ctx, b.peers.mcpStates)
}

func (b *bencher) mcpStatelessStream(ctx context.Context) error {
	return b.peers.mcpStream(ctx, b.peers.mcpNoSess)
}

// jsonCodec carries gRPC messages as JSON: what lets the peer run without
// generated protobuf code.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (jsonCodec) Name() string                       { return "json" }

const (
	grpcEcho  = "/toolmesh.bench.Peer/Echo"
	grpcCount = "/toolmesh.bench.Peer/Count"
)

// grpcService is what generated code would declare: a unary Echo and a
// server-streaming Count.
func (p *benchPeers) grpcService() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "toolmesh.bench.Peer",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Echo",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				var in echoMessage
				if err := dec(&in); err != nil {
					return nil, err
				}
				return &in, nil
			}}},
		Streams: []grpc.StreamDesc{{StreamName: "Count", ServerStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				var in struct{}
				if err := stream.RecvMsg(&in); err != nil {
					return err
				}
				for i := range p.deltas {
					if err := stream.SendMsg(&countMessage{I: i + 1}); err != nil {
						return err
					}
				}
				return nil
			}}},
	}
}

func (p *benchPeers) startGRPC() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return envelope.Problemf(envelope.CodeInternal, "cannot listen for the gRPC peer: %v", err)
	}
	p.grpcSrv = grpc.NewServer(grpc.ForceServerCodec(jsonCodec{}))
	p.grpcSrv.RegisterService(p.grpcService(), struct{}{})
	go func() { _ = p.grpcSrv.Serve(ln) }()
	p.grpcConn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(jsonCodec{})))
	if err != nil {
		return envelope.Problemf(envelope.CodeInternal, "cannot connect to the gRPC peer: %v", err)
	}
	return nil
}

func (b *bencher) grpcUnary(ctx context.Context) error {
	var out echoMessage
	if err := b.peers.grpcConn.Invoke(ctx, grpcEcho, &b.peers.args, &out); err != nil {
		return err
	}
	if len(out.Message) != len(b.peers.args.Message) {
		return fmt.Errorf("the gRPC peer echoed %d bytes of %d", len(out.Message), len(b.peers.args.Message))
	}
	return nil
}

func (b *bencher) grpcStream(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := b.peers.grpcConn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, grpcCount)
	if err != nil {
		return err
	}
	if err := s.SendMsg(&struct{}{}); err != nil {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	n := 0
	for {
		var m countMessage
		err := s.RecvMsg(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		n++
	}
	if n != b.peers.deltas {
		return fmt.Errorf("the gRPC peer streamed %d of %d events", n, b.peers.deltas)
	}
	return nil
}

func (p *benchPeers) close() {
	for _, cs := range []*mcp.ClientSession{p.mcpStates, p.mcpNoSess} {
		if cs != nil {
			_ = cs.Close()
		}
	}
	if p.httpSrv != nil {
		_ = p.httpSrv.Close()
	}
	if p.grpcConn != nil {
		_ = p.grpcConn.Close()
	}
	if p.grpcSrv != nil {
		p.grpcSrv.Stop()
	}
}
