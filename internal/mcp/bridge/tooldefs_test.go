package bridge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHTTPToolsListDefinitionsKept: the answer to tools/list from an HTTP
// server, as JSON or as an event stream, leaves each tool's definition
// in defs byte for byte (what the SDK's decoding loses, execution and an
// unset hint, included), and the SDK still reads the whole answer.
func TestHTTPToolsListDefinitionsKept(t *testing.T) {
	const tool = `{"name":"w","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true},"execution":{"taskSupport":"optional"}}`
	answer := `{"jsonrpc":"2.0","id":7,"result":{"tools":[` + tool + `]}}`
	for _, sse := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: message\ndata: "+answer+"\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, answer)
		}))
		defs := &toolDefs{}
		client := &http.Client{Transport: headerTransport{next: http.DefaultTransport, defs: defs}}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL,
			bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		srv.Close()
		if err != nil || !bytes.Contains(body, []byte(answer)) {
			t.Fatalf("sse %v: the SDK would read %q, %v: want the whole answer", sse, body, err)
		}
		if got := string(defs.of("w")); got != tool {
			t.Fatalf("sse %v: definition kept %q, want the server's %s", sse, got, tool)
		}
	}
}
