package wire

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	callA = "tm2 id=A1 caller=C mode=unary\n{\"args\":{\"i\":1}}"
	callB = "tm2 id=B2 caller=C\n{\"args\":{}}"
)

func TestSplitBatch(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		ids   string // comma-separated; "" when the batch must be refused
		calls []string
	}{
		{"two", "tm2 batch len=46,30\n" + callA + callB, "A1,B2", []string{callA, callB}},
		{"one", "tm2 batch len=30\n" + callB, "B2", []string{callB}},
		{"unknown keys ignored", "tm2 batch x=1 len=30 y=2\n" + callB, "B2", []string{callB}},
		{"id ends the line", "tm2 batch len=12\ntm2 id=Z\n{}}", "Z", []string{"tm2 id=Z\n{}}"}},
		{"short payload", "tm2 batch len=46,31\n" + callA + callB, "", nil},
		{"long payload", "tm2 batch len=46,29\n" + callA + callB, "", nil},
		{"zero length", "tm2 batch len=0,46,30\n" + callA + callB, "", nil},
		{"no len", "tm2 batch n=2\n" + callA + callB, "", nil},
		{"no newline", "tm2 batch len=44", "", nil},
		{"pair without =", "tm2 batch len=30 oops\n" + callB, "", nil},
		{"call without metadata", "tm2 batch len=11\n{\"args\":{}}", "", nil},
		{"id not first", "tm2 batch len=25\ntm2 caller=C id=X\n{}\n{}}", "", nil},
		{"wildcard id", "tm2 batch len=13\ntm2 id=>\n{}}}", "", nil},
		{"empty id", "tm2 batch len=12\ntm2 id=\n{}}}", "", nil},
		{"id without line end", "tm2 batch len=8\ntm2 id=A", "", nil},
		{"too many", "tm2 batch len=" + strings.Repeat("12,", MaxBatchCalls) + "12\n" + strings.Repeat("tm2 id=Z\n{}}", MaxBatchCalls+1), "", nil},
		{"not a batch", "tm2 id=A\n{}", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls, ids, err := SplitBatch([]byte(tc.body))
			if tc.ids == "" {
				if err == nil {
					t.Fatalf("accepted: %q %v", calls, ids)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(ids, ",") != tc.ids {
				t.Fatalf("ids %v, want %s", ids, tc.ids)
			}
			for i := range tc.calls {
				if string(calls[i]) != tc.calls[i] {
					t.Fatalf("call %d = %q, want %q", i, calls[i], tc.calls[i])
				}
			}
		})
	}
}

// The wire shapes of coalescing, byte for byte: a batch message, and the
// replies of batched calls (a bare event made a frame, a frame given id=).
func TestBatchGolden(t *testing.T) {
	var out bytes.Buffer
	batch := AppendBatchHead(nil, []int{len(callA), len(callB)})
	batch = append(append(batch, callA...), callB...)
	out.WriteString("# batch of two calls\n")
	out.Write(batch)
	out.WriteString("\n# bare unary terminal of call A1\n")
	out.Write(WithCallID([]byte(`{"type":"result","data":{"i":1}}`), "A1"))
	out.WriteString("\n# events frame of call B2\n")
	out.Write(WithCallID(append(AppendEventsHead(nil, 3, []int{2, 2}), "{}{}"...), "B2"))
	out.WriteString("\n# chunk of call B2\n")
	out.Write(WithCallID(append(AppendChunkHead(nil, 4, 1, 2), "{\"ty"...), "B2"))
	out.WriteString("\n# unary terminals of calls A1 and B2 together\n")
	out.Write(append(AppendEndsHead(nil, []string{"A1", "B2"}, []int{17, 16}), `{"type":"result"}{"type":"error"}`...))
	out.WriteString("\n")
	golden := filepath.Join("testdata", "batch.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wire shapes changed (go test -update to accept):\n%s", out.Bytes())
	}
	// And each shape decodes to what it says.
	if _, ids, err := SplitBatch(batch); err != nil || strings.Join(ids, ",") != "A1,B2" {
		t.Fatalf("batch: %v %v", ids, err)
	}
	f, err := ParseFrame(WithCallID([]byte(`{"type":"result"}`), "A1"))
	if err != nil || f.Kind != FrameEvents || f.Seq != 1 || f.ID != "A1" {
		t.Fatalf("framed bare event: %+v %v", f, err)
	}
	if evs, err := f.Events(); err != nil || len(evs) != 1 || string(evs[0]) != `{"type":"result"}` {
		t.Fatalf("framed bare event: %q %v", evs, err)
	}
	f, err = ParseFrame(WithCallID(append(AppendChunkHead(nil, 4, 1, 2), "xy"...), "B2"))
	if err != nil || f.Kind != FrameChunk || f.ID != "B2" || f.Part != 1 || string(f.Payload) != "xy" {
		t.Fatalf("framed chunk: %+v %v", f, err)
	}
	f, err = ParseFrame(append(AppendEndsHead(nil, []string{"A1", "B2"}, []int{2, 3}), "{}[1]"...))
	if err != nil || f.Kind != FrameEnds {
		t.Fatalf("ends frame: %+v %v", f, err)
	}
	if ids, evs, err := f.Ends(); err != nil || strings.Join(ids, ",") != "A1,B2" || string(evs[1]) != "[1]" {
		t.Fatalf("ends frame: %v %q %v", ids, evs, err)
	}
	for _, bad := range []string{
		"tm2 ends ids=A,B len=2\n{}",       // more ids than events
		"tm2 ends ids=A len=2,2\n{}{}",     // more events than ids
		"tm2 ends ids=A,a.b len=2,2\n{}{}", // an id that is no token
		"tm2 ends ids=A,,B len=2,2\n{}{}",  // an empty id
		"tm2 ends len=2\n{}",               // no ids
		"tm2 ends ids=A\n{}",               // no len
	} {
		if f, err := ParseFrame([]byte(bad)); err == nil {
			if _, _, err := f.Ends(); err == nil {
				t.Errorf("%q accepted", bad)
			}
		}
	}
	if _, err := ParseFrame([]byte("tm2 ev seq=1 len=2 id=a.b\n{}")); err == nil {
		t.Fatal("a frame naming a call id that is not a token was accepted")
	}
}

// FuzzSplitBatch: whatever the bytes, SplitBatch never panics, and what it
// accepts re-encodes to a batch that splits into the same calls and ids.
func FuzzSplitBatch(f *testing.F) {
	f.Add([]byte("tm2 batch len=46,30\n" + callA + callB))
	f.Add([]byte("tm2 batch len=12\ntm2 id=Z\n{}}"))
	f.Add([]byte("tm2 batch len=1,1\nab"))
	f.Add([]byte("tm2 batch len=999999999999999\n"))
	f.Add([]byte("tm2 batch len=,\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		calls, ids, err := SplitBatch(body)
		if err != nil {
			return
		}
		if len(calls) == 0 || len(calls) > MaxBatchCalls || len(calls) != len(ids) {
			t.Fatalf("%d calls, %d ids", len(calls), len(ids))
		}
		sizes := make([]int, len(calls))
		again := []byte{}
		for i, c := range calls {
			sizes[i] = len(c)
			again = append(again, c...)
		}
		again = append(AppendBatchHead(nil, sizes), again...)
		calls2, ids2, err := SplitBatch(again)
		if err != nil || len(calls2) != len(calls) {
			t.Fatalf("re-encoded batch refused: %v", err)
		}
		for i := range calls {
			if !bytes.Equal(calls[i], calls2[i]) || ids[i] != ids2[i] || !ValidCallID([]byte(ids[i])) {
				t.Fatalf("call %d changed: %q/%s vs %q/%s", i, calls[i], ids[i], calls2[i], ids2[i])
			}
		}
	})
}

// A call id is 1-128 of A-Z a-z 0-9 _ -: every other byte, anywhere in
// it, makes it invalid, and so does an id too short or too long.
func TestValidCallIDBytes(t *testing.T) {
	for b := 0; b < 256; b++ {
		c := byte(b)
		want := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		for _, id := range [][]byte{{c}, {'a', c}, {c, 'a', 'b'}} {
			if got := ValidCallID(id); got != want {
				t.Errorf("ValidCallID(%q) = %v, want %v", id, got, want)
			}
		}
	}
	if ValidCallID(nil) || ValidCallID(bytes.Repeat([]byte{'a'}, 129)) || !ValidCallID(bytes.Repeat([]byte{'a'}, 128)) {
		t.Error("ValidCallID takes 1 to 128 bytes, no fewer and no more")
	}
}
