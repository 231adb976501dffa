package wire_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// The benchmarks below set each hand-written JSON piece of the package
// beside what it replaces (segmentio's engine and encoding/json), on the
// input its hot path sees. Run them together so both sides share the
// machine's load:
//
//	go test -run '^$' -bench . -count 6 ./internal/wire/

// benchCallBody is a unary call body as a caller writes it.
const benchCallBody = `{"args":{"path":"docs/architecture.md","max_bytes":65536,"follow":true,"note":"read the section on libraries"},"dry_run":false}`

// benchResult is a tool's result object of about 1.5 KiB: under the size
// where Valid hands over to segmentio's validator.
var benchResult = func() string {
	var b strings.Builder
	b.WriteString(`{"lines":[`)
	for i := range 24 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"n":12,"text":"func main() { fmt.Println(\"héllo\") }"}`)
	}
	b.WriteString(`],"complete":true,"path":"main.go"}`)
	return b.String()
}()

// BenchmarkValid is Valid (validGrammar under 2 KiB, plus UTF-8) beside
// segmentio's Valid and encoding/json's Valid, each with the same UTF-8
// check, on a call body and on a small result.
func BenchmarkValid(b *testing.B) {
	for _, in := range []struct{ name, doc string }{{"call", benchCallBody}, {"result1k", benchResult}} {
		doc := []byte(in.doc)
		b.Run(in.name+"/wire", benchValid(doc, wire.Valid))
		b.Run(in.name+"/segmentio", benchValid(doc, func(d []byte) bool { return segjson.Valid(d) && utf8.Valid(d) }))
		b.Run(in.name+"/encoding_json", benchValid(doc, func(d []byte) bool { return json.Valid(d) && utf8.Valid(d) }))
	}
}

func benchValid(doc []byte, valid func([]byte) bool) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if !valid(doc) {
				b.Fatal("invalid")
			}
		}
	}
}

// plainCall is the call body as a struct either engine decodes: what
// ParseCall would be without its scanner.
type plainCall struct {
	Args           json.RawMessage          `json:"args"`
	DryRun         bool                     `json:"dry_run,omitempty"`
	Page           *envelope.Page           `json:"page,omitempty"`
	ResponseFormat *envelope.ResponseFormat `json:"response_format,omitempty"`
}

// BenchmarkParseCall is ParseCall (Check, then ScanRawMembers) beside an
// Unmarshal of the same body into a struct by segmentio and by
// encoding/json, each followed by the checks ParseCall makes (UTF-8, args
// an object).
func BenchmarkParseCall(b *testing.B) {
	body := []byte(benchCallBody)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.ParseCall[envelope.Page, envelope.ResponseFormat](body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("segmentio", benchUnmarshalCall(body, segjson.Unmarshal))
	b.Run("encoding_json", benchUnmarshalCall(body, json.Unmarshal))
}

func benchUnmarshalCall(body []byte, unmarshal func([]byte, any) error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c plainCall
			if err := unmarshal(body, &c); err != nil || !utf8.Valid(body) || !wire.IsObject(c.Args) {
				b.Fatal("bad call", err)
			}
		}
	}
}

// BenchmarkScanMembers is the split of a valid result object into its
// members (what the Response builder does to look for reserved names)
// beside an Unmarshal into map[string]json.RawMessage.
func BenchmarkScanMembers(b *testing.B) {
	doc := []byte(benchResult)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			if err := wire.ScanRawMembers(doc, func(_, _ []byte) error { n++; return nil }); err != nil || n != 3 {
				b.Fatal(err, n)
			}
		}
	})
	b.Run("segmentio", benchMembers(doc, segjson.Unmarshal))
	b.Run("encoding_json", benchMembers(doc, json.Unmarshal))
}

func benchMembers(doc []byte, unmarshal func([]byte, any) error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := unmarshal(doc, &m); err != nil || len(m) != 3 {
				b.Fatal(err, len(m))
			}
		}
	}
}

// BenchmarkAppendString is AppendString (segmentio's AppendEscape) beside
// encoding/json's Marshal, on a member name and on an event's message.
func BenchmarkAppendString(b *testing.B) {
	for _, in := range []struct{ name, s string }{
		{"name", "pending_files"},
		{"message", `indexing 1,204 of 3,000 files in "src/<gen>" — 40% done`},
	} {
		b.Run(in.name+"/wire", benchAppend(in.s, wire.AppendString))
		b.Run(in.name+"/encoding_json", benchAppend(in.s, func(buf []byte, s string) []byte {
			enc, _ := json.Marshal(s)
			return append(buf, enc...)
		}))
	}
}

func benchAppend(s string, appendString func([]byte, string) []byte) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf = appendString(buf[:0], s)
		}
	}
}

// BenchmarkAppendFloat is AppendFloat beside segmentio's Append and
// encoding/json's Marshal of a float64 (a Problem's retry_after), read
// through a pointer as Problem's encoder does.
func BenchmarkAppendFloat(b *testing.B) {
	retry := []float64{2.75, 0.5, 30, 1e-7}
	b.Run("wire", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		i := 0
		for b.Loop() {
			buf, _ = wire.AppendFloat(buf[:0], retry[i%len(retry)])
			i++
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		i := 0
		for b.Loop() {
			buf, _ = segjson.Append(buf[:0], retry[i%len(retry)], segjson.EscapeHTML)
			i++
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 64)
		i := 0
		for b.Loop() {
			enc, _ := json.Marshal(retry[i%len(retry)])
			buf = append(buf[:0], enc...)
			i++
		}
	})
}

// BenchmarkParseBeacon is ParseBeacon (segmentio) beside encoding/json on
// a registry entry, the value a registry pass reads 10,000 of.
func BenchmarkParseBeacon(b *testing.B) {
	entry := []byte(`{"worker_id":"pool-a.w-01JD5Q7ZK3M8X2V4T6N9P0R1S2","state":"up","revision":17,"interval_ms":5000,"specs":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","refresh_ms":30000}`)
	b.Run("segmentio", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.ParseBeacon(entry); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var bc wire.Beacon
			if err := json.Unmarshal(entry, &bc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSpecDigest is SpecDigest of a spec with a binding (json.Marshal,
// then withoutMember's scan) beside dropping the member through a map
// with segmentio (which sorts the members, so it gives other bytes and
// other digests: it shows the scan's price, not a drop-in replacement).
func BenchmarkSpecDigest(b *testing.B) {
	var spec envelope.ToolSpec
	if err := json.Unmarshal(mustRead(b, "../../envelope/testdata/toolspec.json"), &spec); err != nil {
		b.Fatal(err)
	}
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if wire.SpecDigest(spec) == "" {
				b.Fatal("no digest")
			}
		}
	})
	b.Run("segmentio_map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, _ := json.Marshal(spec)
			var m map[string]json.RawMessage
			if err := segjson.Unmarshal(enc, &m); err != nil {
				b.Fatal(err)
			}
			delete(m, "binding")
			enc, _ = segjson.Marshal(m)
			if wire.SpecsDigest(enc) == "" {
				b.Fatal("no digest")
			}
		}
	})
}

func mustRead(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
