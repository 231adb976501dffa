package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// IsObject reports whether b (valid JSON) is an object: its first
// character past white space is '{'. The one check of "is this an
// object?" for every package, since only objects flatten into responses.
func IsObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// Valid reports whether data is one JSON document in valid UTF-8: what
// json.Valid checks, plus the encoding RFC 8259 requires of JSON text.
//
// The grammar is checked by github.com/segmentio/encoding/json, whose
// Valid scans strings with SIMD: 14 GB/s on a 10 MiB result against
// encoding/json's 127 MB/s, which made validation most of a large
// result's cost. A small document (under smallDoc bytes: every unary
// call body) is checked by validGrammar instead, as the vector code's
// fixed cost per document outweighs its speed there. FuzzValidAgrees
// holds both to encoding/json's answers.
func Valid(data []byte) bool {
	if len(data) < smallDoc {
		return validGrammar(data) && utf8.Valid(data)
	}
	return segjson.Valid(data) && utf8.Valid(data)
}

// Same reports whether a and b are the same JSON value: the same
// members (in any order) with the same values, numbers compared by value.
func Same(a, b []byte) bool {
	va, errA := decodeNumbers(a)
	vb, errB := decodeNumbers(b)
	return errA == nil && errB == nil && sameValue(va, vb)
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	}
	return a == b
}

// sameNumber compares two JSON numbers by value: exactly when both are
// integers, else as float64 (the precision every JSON peer can rely on).
func sameNumber(x, y json.Number) bool {
	if x == y {
		return true
	}
	if i, err := x.Int64(); err == nil {
		if j, err := y.Int64(); err == nil {
			return i == j
		}
	}
	if strings.ContainsAny(string(x)+string(y), ".eE") {
		f, errF := x.Float64()
		g, errG := y.Float64()
		return errF == nil && errG == nil && f == g
	}
	return false
}

// Args encodes a call's args as the JSON object a call carries: nil is
// {}; json.RawMessage, []byte and string are taken as JSON text and
// checked; anything else is marshalled. Every package that sends a
// call's args (the caller, the task client) encodes them so.
func Args(args any) (json.RawMessage, error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		if !IsObject(b) {
			return nil, errors.New("want a JSON object")
		}
		return b, nil
	}
	if !Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	if !IsObject(raw) {
		return nil, errors.New("want a JSON object")
	}
	return raw, nil
}
