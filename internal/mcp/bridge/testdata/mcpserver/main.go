// Command mcpserver is an MCP server built from the official Go SDK for
// the bridge tests: it serves over stdio, or over streamable HTTP with
// -http ADDR (printing "listening on URL" to stderr).
//
// Tools: echo (structured result), count (progress with a total),
// block (reports progress, then waits for cancellation), cancelled (how many block calls saw
// their context end), crash (exits the process), add_tool (adds "extra",
// which sends list_changed), text (content only), fail (isError), pid,
// blocks (every content block kind, structuredContent and _meta),
// fail_image (isError with an image), fail_secret (isError quoting
// $TESTSERVER_SECRET after n bytes).
// With -wild it also lists tools whose schemas servers in the wild emit
// (no "type", {}, true, a type list, 2020-12 keywords), and with
// -unhostable one whose inputSchema no argument object can match.
// With -files it offers resources: file:///notes/readme.txt listed, and
// a catch-all template file:///{+path} answering every other file URI;
// its tool reads says every URI a resources/read brought it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoArgs struct {
	Message string `json:"message"`
}

type countArgs struct {
	N int `json:"n"`
}

type empty struct{}

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on ADDR instead of stdio")
	wild := flag.Bool("wild", false, "also list tools with the schemas servers in the wild emit")
	unhostable := flag.Bool("unhostable", false, `also list a tool whose inputSchema is {"type":"string"}`)
	files := flag.Bool("files", false, "also offer a listed file resource and a catch-all file:///{+path} template")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	addTools(s)
	addControlTools(s)
	addClientTools(s)
	if *wild || *unhostable {
		addWildTools(s, *wild, *unhostable)
	}
	if *files {
		addFiles(s)
	}
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	serveHTTP(s, *addr)
}

// addTools adds the tools that exercise calls, progress and cancellation.
func addTools(s *mcp.Server) {
	var cancelled atomic.Int64
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, echoArgs, error) {
			return nil, a, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "count", Description: "progress n times"},
		func(ctx context.Context, req *mcp.CallToolRequest, a countArgs) (*mcp.CallToolResult, map[string]int, error) {
			for i := 1; i <= a.N; i++ {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(a.N), Message: fmt.Sprintf("step %d", i)})
				}
			}
			// The go-sdk client handles notifications on a queue but
			// retires responses at once; a ping queues behind the progress,
			// so once it is answered the client has seen every notification.
			if err := req.Session.Ping(ctx, nil); err != nil {
				return nil, nil, err
			}
			return nil, map[string]int{"count": a.N}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "blocks until cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, empty, error) {
			// The progress tells the test the call reached this handler.
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "blocking"})
			}
			<-ctx.Done()
			cancelled.Add(1)
			return nil, empty{}, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "cancelled", Description: "counts block calls that saw cancellation"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, map[string]int64, error) {
			return nil, map[string]int64{"cancelled": cancelled.Load()}, nil
		})
}

// addControlTools adds the tools that change or report the server itself.
func addControlTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "the server's process id"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, map[string]int, error) {
			return nil, map[string]int{"pid": os.Getpid()}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exits the server"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, empty, error) {
			os.Exit(3)
			return nil, empty{}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "adds the tool extra"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, empty, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra"}, func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, map[string]bool, error) {
				return nil, map[string]bool{"extra": true}, nil
			})
			return nil, empty{}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "text", Description: "content only"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain " + os.Getenv("TESTSERVER_GREETING")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "blocks", Description: "every content block kind, structuredContent and _meta"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			pixel := []byte("\x89PNG\r\n\x1a\n")
			return &mcp.CallToolResult{
				Meta: mcp.Meta{"example.com/k": "v"},
				Content: []mcp.Content{
					&mcp.TextContent{Text: "hello\n", Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}, Priority: 0.5}},
					&mcp.ImageContent{Data: pixel, MIMEType: "image/png"},
					&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://r", MIMEType: "text/plain", Text: "embedded"}},
					&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://b", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
					&mcp.ResourceLink{URI: "file:///tmp/x", Name: "x", Title: "X", MIMEType: "text/plain"},
				},
				StructuredContent: map[string]any{"content": "hello\n", "n": 2},
			}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail_image", Description: "reports an error with an image"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad frame"},
				&mcp.ImageContent{Data: []byte("GIF89a"), MIMEType: "image/gif"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "reports an error"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail_secret", Description: "reports an error quoting TESTSERVER_SECRET after n bytes"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			N int `json:"n"`
		}) (*mcp.CallToolResult, any, error) {
			text := strings.Repeat("x", in.N) + os.Getenv("TESTSERVER_SECRET") + " denied"
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
}

// addClientTools adds the tools that show what the client is told and
// sent: its declared capabilities, an error result of a tool with an
// output schema, and log messages of calls in flight together.
func addClientTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "client_caps", Description: "the client capabilities the client declared"},
		func(_ context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, map[string]bool, error) {
			caps := req.Session.InitializeParams().Capabilities
			return nil, map[string]bool{"roots": caps.RootsV2 != nil || caps.Roots.ListChanged,
				"elicitation": caps.Elicitation != nil, "sampling": caps.Sampling != nil}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail_typed", Description: "reports an error, though it declares an output schema"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, struct {
			N int `json:"n"`
		}, error) {
			res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no n today"}}}
			return res, struct {
				N int `json:"n"`
			}{}, nil
		})
	var mu sync.Mutex
	var waiting chan struct{}
	// pair returns a channel closed once a second call has come in.
	pair := func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if waiting == nil {
			waiting = make(chan struct{})
			return waiting
		}
		both := waiting
		close(both)
		waiting = nil
		return both
	}
	mcp.AddTool(s, &mcp.Tool{Name: "log_pair", Description: "logs its tag, waits for a second call to be in flight, logs it again"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Tag string `json:"tag"`
		}) (*mcp.CallToolResult, map[string]string, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "pair", Data: in.Tag + " start"})
			select {
			case <-pair():
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "pair", Data: in.Tag + " end"})
			return nil, map[string]string{"tag": in.Tag}, nil
		})
}

// serveHTTP serves s over streamable HTTP, only to requests that carry
// the header the bridge's binding sets.
func serveHTTP(s *mcp.Server, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if r.Header.Get("X-Test-Key") != "k1" {
			return nil
		}
		return s
	}, nil)
	fmt.Fprintf(os.Stderr, "listening on http://%s/\n", ln.Addr())
	log.Fatal(http.Serve(ln, h))
}

// wildSchemas are the inputSchemas the -wild tools are listed with. The
// SDK's AddTool insists on "type":"object", so they are written into the
// tools/list result by a middleware, as a server built on another SDK
// would send them.
var wildSchemas = map[string]string{
	"zero_empty":   `{}`,
	"zero_true":    `true`,
	"props_notype": `{"properties":{"q":{"type":"string"}},"required":["q"]}`,
	"type_list":    `{"type":["object","null"],"properties":{"n":{"type":"integer","maximum":9007199254740993}}}`,
	"dialect_2020": `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"addr":{"type":"object","properties":{"city":{"type":"string"}}}},"properties":{"address":{"$ref":"#/$defs/addr"}},"additionalProperties":false}`,
}

// addWildTools adds the -wild tools (each answers {"tool": its name}) and
// the -unhostable one, and the middleware that lists their schemas.
func addWildTools(s *mcp.Server, wild, unhostable bool) {
	schemas := map[string]string{}
	if wild {
		for k, v := range wildSchemas {
			schemas[k] = v
		}
	}
	if unhostable {
		schemas["stringy"] = `{"type":"string"}`
	}
	for name := range schemas {
		s.AddTool(&mcp.Tool{Name: name, Description: "wild schema " + name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]string{"tool": name},
					Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for i, t := range lr.Tools {
					if raw, ok := schemas[t.Name]; ok {
						c := *t // the server's own tool stays as registered
						c.InputSchema = json.RawMessage(raw)
						lr.Tools[i] = &c
					}
				}
			}
			return res, err
		}
	})
}

// addFiles adds the -files resources and the tool reads, and records the
// URI of every resources/read before the SDK looks at it.
func addFiles(s *mcp.Server) {
	var mu sync.Mutex
	reads := []string{}
	text := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "contents of " + req.Params.URI}}}, nil
	}
	s.AddResource(&mcp.Resource{URI: "file:///notes/readme.txt", Name: "readme", MIMEType: "text/plain"}, text)
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///{+path}", Name: "any file", MIMEType: "text/plain"}, text)
	mcp.AddTool(s, &mcp.Tool{Name: "reads", Description: "every URI a resources/read brought the server"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, map[string][]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return nil, map[string][]string{"reads": append([]string{}, reads...)}, nil
		})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ReadResourceRequest); ok {
				mu.Lock()
				reads = append(reads, r.Params.URI)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
}
