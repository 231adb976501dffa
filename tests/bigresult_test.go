package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/caller"
	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/meshtest"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/cli"
)

// tenMiB is a result ten times the server's default max_payload.
func tenMiB() map[string]string {
	var b strings.Builder
	for i := 0; b.Len() < 10<<20; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(' ')
	}
	return map[string]string{"blob": b.String()}
}

// A 10 MiB result arrives whole, unary and streamed: chunked over the
// call's event stream and reassembled.
func TestTenMiBResultArrivesWhole(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	want := tenMiB()
	register(t, f.w, envelope.ToolSpec{Name: "big"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return want, nil
	})
	wantJSON, _ := json.Marshal(want)
	resp, err := f.c.Call(context.Background(), "big", nil)
	if err != nil || !bytes.Equal(resp.Data, wantJSON) {
		t.Fatalf("unary: %v, %d bytes, want %d", err, len(resp.Data), len(wantJSON))
	}
	s, err := f.c.Stream(context.Background(), "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = s.Response()
	if err != nil || !bytes.Equal(resp.Data, wantJSON) {
		t.Fatalf("stream: %v, %d bytes, want %d", err, len(resp.Data), len(wantJSON))
	}
}

// Past the caller's cap the call ends payload_too_large, never cut.
func TestResultPastCallerCap(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{MaxResultBytes: 4 << 20})
	register(t, f.w, envelope.ToolSpec{Name: "big"}, func(context.Context, *worker.Request, worker.Emitter) (any, error) {
		return tenMiB(), nil
	})
	_, err := f.c.Call(context.Background(), "big", nil)
	if p := wantCode(t, err, envelope.CodePayloadTooLarge); !strings.Contains(p.Detail, "max_result_bytes") {
		t.Fatalf("caller cap: %v", p)
	}
}

// A 50,000-line `lines` tool printing 2.15 MB (twice the server's
// max_payload, the case) arrives whole and once: in the result of
// a unary call; as 50,000 deltas (and a result that only counts them) of a
// streamed one.
func TestFiftyThousandLinesArriveOnce(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{})
	file, err := cli.Parse([]byte(`
tools:
  - name: numbers
    binding: {cli: {cmd: seq, args: ["-f", "%042g", "1", "50000"], output_format: lines}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.RegisterFile(f.w, file, meshtest.Quiet()); err != nil {
		t.Fatal(err)
	}
	resp, err := f.c.Call(context.Background(), "numbers", nil)
	if err != nil {
		t.Fatal(err)
	}
	var unary struct{ Lines []string }
	if err := json.Unmarshal(resp.Data, &unary); err != nil || len(unary.Lines) != 50000 || unary.Lines[49999] != fmt.Sprintf("%042d", 50000) {
		t.Fatalf("unary: %v, %d lines", err, len(unary.Lines))
	}
	s, err := f.c.Stream(context.Background(), "numbers", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		switch ev.Type {
		case envelope.EventDelta:
			n++
			if want := fmt.Sprintf(`{"line":"%042d"}`, n); string(ev.Data) != want {
				t.Fatalf("delta %d is %s, want %s", n, ev.Data, want)
			}
		case envelope.EventResult:
			if string(ev.Data) != `{"lines_streamed":50000,"stderr":""}` {
				t.Fatalf("streamed result %.200s", ev.Data)
			}
		}
	})
	if n != 50000 {
		t.Fatalf("%d deltas, want 50000", n)
	}
}

// A delta larger than one NATS message arrives whole too, in order, and
// counts as one event against the stream's credit.
func TestLargeDeltasArriveWhole(t *testing.T) {
	f := newMesh(t, worker.Config{}, caller.Config{Options: []caller.Option{caller.WithWindow(2)}})
	big := strings.Repeat("d", 3<<20)
	register(t, f.w, envelope.ToolSpec{Name: "deltas"}, func(_ context.Context, _ *worker.Request, emit worker.Emitter) (any, error) {
		for i := range 4 {
			if err := emit.Delta(map[string]any{"i": i, "blob": big}); err != nil {
				return nil, err
			}
		}
		return map[string]int{"n": 4}, nil
	})
	s, err := f.c.Stream(context.Background(), "deltas", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	eachEvent(t, s, func(ev envelope.ToolEvent) {
		if ev.Type == envelope.EventDelta {
			var d struct {
				I    int
				Blob string
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil || d.I != n || d.Blob != big {
				t.Fatalf("delta %d: %v, i=%d, %d bytes", n, err, d.I, len(d.Blob))
			}
			n++
		}
	})
	if n != 4 {
		t.Fatalf("%d deltas, want 4", n)
	}
}
