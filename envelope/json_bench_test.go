package envelope

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// The benchmarks below set envelope's hand-written event and Problem
// codecs beside what they replace (segmentio's engine and encoding/json
// on a plain struct of the same members). Run them together so both
// sides share the machine's load:
//
//	go test -run '^$' -bench 'Event|Problem|SchemaValidate' -count 6 ./envelope/

// plainEvent is a ToolEvent's members as a struct either engine encodes
// and decodes by reflection.
type plainEvent struct {
	Type     string          `json:"type"`
	ToolID   string          `json:"tool_id,omitempty"`
	CallID   string          `json:"call_id,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	Pct      *float64        `json:"pct,omitempty"`
	Message  string          `json:"message,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Code     string          `json:"code,omitempty"`
	Details  json.RawMessage `json:"details,omitempty"`
}

// benchEvents are the events of a stream: the deltas that are its bulk,
// and a progress event.
var benchEvents = []struct{ name, doc string }{
	{"delta", `{"type":"delta","data":{"token":"hello, world","index":17}}`},
	{"progress", `{"type":"progress","pct":40,"message":"indexing 1,204 of 3,000 files"}`},
}

// BenchmarkParseEvent is ParseEvent (parseDelta's one pass, or Check then
// ScanRawMembers) beside an Unmarshal into plainEvent by segmentio and by
// encoding/json, each with the UTF-8 check ParseEvent makes.
func BenchmarkParseEvent(b *testing.B) {
	for _, in := range benchEvents {
		doc := []byte(in.doc)
		b.Run(in.name+"/scan", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseEvent(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/segmentio", benchUnmarshalEvent(doc, segjson.Unmarshal))
		b.Run(in.name+"/encoding_json", benchUnmarshalEvent(doc, json.Unmarshal))
	}
}

func benchUnmarshalEvent(doc []byte, unmarshal func([]byte, any) error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev plainEvent
			if err := unmarshal(doc, &ev); err != nil || !utf8.Valid(doc) || ev.Type == "" {
				b.Fatal("bad event", err)
			}
		}
	}
}

// BenchmarkAppendEvent is ToolEvent.AppendJSON beside segmentio's Append
// and encoding/json's Marshal of the same event as a plainEvent.
func BenchmarkAppendEvent(b *testing.B) {
	for _, in := range benchEvents {
		ev := must(ParseEvent([]byte(in.doc)))
		plain := plainEvent{Type: string(ev.Type), Pct: ev.Pct, Message: ev.Message, Data: ev.Data}
		b.Run(in.name+"/append", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf, _ = ev.AppendJSON(buf[:0])
			}
		})
		b.Run(in.name+"/segmentio", func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				buf, _ = segjson.Append(buf[:0], &plain, segjson.EscapeHTML)
			}
		})
		b.Run(in.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(&plain); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProblemJSON is Problem's appendJSON beside segmentio's Append
// of the same members as a struct, both into a reused buffer, and the
// reflection-based encoder appendJSON replaced (legacyProblemJSON,
// encoding/json per member).
func BenchmarkProblemJSON(b *testing.B) {
	p := NewProblem(CodeInvalidInput, `field "path": want a string, got 3`)
	retry := 2.5
	p.RetryAfter = &retry
	p.SuggestedFix = &SuggestedFix{Description: "pass the path as a string", Applicability: "maybe_incorrect"}
	type plainFix struct {
		Description   string `json:"description"`
		Applicability string `json:"applicability"`
	}
	plain := struct {
		Type         string       `json:"type"`
		Title        string       `json:"title"`
		Status       int          `json:"status"`
		Detail       string       `json:"detail"`
		Instance     string       `json:"instance"`
		Code         string       `json:"code"`
		RetryAfter   *float64     `json:"retry_after"`
		SuggestedFix *plainFix    `json:"suggested_fix"`
		CodeActions  []CodeAction `json:"code_actions"`
		ExitCode     int          `json:"exit_code"`
	}{p.Type, p.Title, p.Status, p.Detail, p.Instance, string(p.Code), p.RetryAfter,
		&plainFix{p.SuggestedFix.Description, string(p.SuggestedFix.Applicability)}, []CodeAction{}, p.ExitCode}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			var err error
			if buf, err = p.appendJSON(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("segmentio", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			var err error
			if buf, err = segjson.Append(buf[:0], &plain, segjson.EscapeHTML); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := legacyProblemJSON(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
