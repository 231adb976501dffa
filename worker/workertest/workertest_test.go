package workertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/worker"
	"github.com/toolmesh/toolmesh/worker/workertest"
)

// words streams its text word by word and returns the count.
func words(_ context.Context, req *worker.Request, emit worker.Emitter) (any, error) {
	var in struct{ Text string }
	if err := req.Bind(&in); err != nil {
		return nil, err
	}
	fields := strings.Fields(in.Text)
	for i, w := range fields {
		if err := emit.Progress(float64(100*i/len(fields)), ""); err != nil {
			return nil, err
		}
		if err := emit.Delta(w); err != nil {
			return nil, err
		}
	}
	return map[string]int{"words": len(fields)}, nil
}

// A streaming handler tested without NATS: the deltas, the event order and
// the result, as a caller would see them.
func ExampleRecorder() {
	rec := workertest.NewRecorder()
	out, err := worker.HandlerFunc(words).Handle(context.Background(),
		workertest.NewRequest("words", map[string]string{"text": "to be or"}), rec)
	deltas, _ := workertest.DeltasAs[string](rec)
	fmt.Println(out, err)
	fmt.Println(deltas)
	for _, ev := range rec.Events() {
		fmt.Print(ev.Type, " ")
	}
	fmt.Println()
	// Output:
	// map[words:3] <nil>
	// [to be or]
	// progress delta progress delta progress delta
}

// A typed streaming handler takes the recorder through NewTypedEmitter.
func ExampleDeltasAs() {
	type token struct{ Text string }
	h := func(_ context.Context, _ *worker.Request, in struct{ N int }, emit worker.TypedEmitter[token]) (int, error) {
		for i := range in.N {
			_ = emit.Delta(token{Text: fmt.Sprint("t", i)})
		}
		return in.N, nil
	}
	rec := workertest.NewRecorder()
	n, _ := h(context.Background(), workertest.NewRequest("tokens", nil), struct{ N int }{2}, worker.NewTypedEmitter[token](rec))
	toks, _ := workertest.DeltasAs[token](rec)
	fmt.Println(n, toks)
	// Output: 2 [{t0} {t1}]
}

func TestRecorder(t *testing.T) {
	cases := []struct {
		name    string
		emit    func(*workertest.Recorder) error
		wantErr string
		events  string // the recorded events' types
	}{
		{"raw delta passes as it is", func(r *workertest.Recorder) error { return r.Delta(json.RawMessage(`{"a": 1}`)) }, "", "delta"},
		{"invalid raw delta", func(r *workertest.Recorder) error { return r.Delta(json.RawMessage(`{`)) }, "not valid JSON", ""},
		{"unencodable delta", func(r *workertest.Recorder) error { return r.Delta(math.Inf(1)) }, "delta: json", ""},
		{"emit after end", func(r *workertest.Recorder) error { r.End(); return r.Progress(1, "late") }, workertest.ErrEnded.Error(), ""},
		{"progress", func(r *workertest.Recorder) error { return r.Progress(50, "half") }, "", "progress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := workertest.NewRecorder()
			err := tc.emit(rec)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			var types []string
			for _, ev := range rec.Events() {
				types = append(types, string(ev.Type))
			}
			if strings.Join(types, " ") != tc.events {
				t.Errorf("events %v, want %q", types, tc.events)
			}
		})
	}
}

// The request binds like a worker's, so a handler's input mistakes are
// the invalid_input Problem a caller would get.
func TestNewRequestBindsLikeTheWorker(t *testing.T) {
	_, err := worker.HandlerFunc(words).Handle(context.Background(), workertest.NewRequest("words", map[string]int{"text": 7}), workertest.NewRecorder())
	var p *envelope.Problem
	if !errors.As(err, &p) || p.Code != envelope.CodeInvalidInput {
		t.Fatalf("err = %v, want invalid_input", err)
	}
	if got := workertest.NewRequest("x", json.RawMessage(`{"a":1}`)); string(got.Args) != `{"a":1}` || !got.Streaming || got.Spec.Name != "x" {
		t.Errorf("request %+v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("unencodable args did not panic")
		}
	}()
	workertest.NewRequest("x", make(chan int))
}

// A delta that does not decode into D is an error naming it.
func TestDeltasAsRefusesAMismatch(t *testing.T) {
	rec := workertest.NewRecorder()
	_ = rec.Delta("a")
	_ = rec.Delta(7)
	if _, err := workertest.DeltasAs[string](rec); err == nil || !strings.Contains(err.Error(), "delta 2") {
		t.Fatalf("err = %v", err)
	}
}
