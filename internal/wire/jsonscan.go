package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The hot paths (a call body on the worker, an event on the caller, a
// Response built from a result) decode small, flat objects. They validate
// the input once with Valid and then split the top-level object with the
// byte scanner below, which may assume well-formed JSON: it exists because
// it beats either engine's Unmarshal there and allocates nothing
// (BenchmarkParseCall: about 2x segmentio's Unmarshal into a struct, 0
// allocations against 2; BenchmarkScanMembers: about 5x segmentio's
// Unmarshal into a map, 0 allocations against 11).

// ErrNotObject is returned when a document is valid JSON but not an object.
var ErrNotObject = errors.New("want a JSON object")

// ScanMembers calls fn for each top-level member of the object data, in
// document order, with the member's decoded name and raw value. data must
// already be valid JSON.
func ScanMembers(data []byte, fn func(name string, value []byte) error) error {
	return ScanRawMembers(data, func(name, value []byte) error { return fn(string(name), value) })
}

// ScanRawMembers is ScanMembers with the name as bytes, valid only during
// the call: a `switch string(name)` on it costs no allocation, which
// matters on the per-message paths.
func ScanRawMembers(data []byte, fn func(name, value []byte) error) error {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return ErrNotObject
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for i < len(data) {
		end := StringEnd(data, i)
		name, err := UnquoteBytes(data[i:end])
		if err != nil {
			return err
		}
		i = SkipSpace(data, end)
		i = SkipSpace(data, i+1) // the colon
		vend := ValueEnd(data, i)
		if err := fn(name, data[i:vend]); err != nil {
			return err
		}
		i = SkipSpace(data, vend)
		if i < len(data) && data[i] == '}' {
			return nil
		}
		i = SkipSpace(data, i+1) // the comma
	}
	return nil
}

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index just past the string starting at b[i] == '"'.
func StringEnd(b []byte, i int) int {
	// bytes.IndexByte finds the next quote with SIMD, which matters for
	// the megabytes of a large result's string; a quote preceded by an odd
	// run of backslashes is escaped.
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		slashes := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			slashes++
		}
		if slashes%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// ValueEnd returns the index just past the value starting at b[i].
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = StringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// Unquote decodes a raw JSON string; the common case (no escapes, valid
// UTF-8) is a plain copy, anything else goes through encoding/json.
func Unquote(raw []byte) (string, error) {
	b, err := UnquoteBytes(raw)
	return string(b), err
}

// UnquoteBytes is Unquote without the string: when raw has no escapes the
// result is a sub-slice of it.
func UnquoteBytes(raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return nil, errors.New("want a string")
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// IsNull reports whether a raw value (as the scanner hands it out, with
// no white space around it) is the literal null.
func IsNull(raw []byte) bool { return len(raw) == 4 && string(raw) == "null" }

// Check returns nil when data is one valid JSON document, else an error
// describing the fault (encoding/json's syntax error, or invalid UTF-8).
// JSON text must be UTF-8 (RFC 8259 §8.1): encoding/json's validator lets
// invalid bytes inside strings through, which would reach peers verbatim.
func Check(data []byte) error {
	if Valid(data) {
		return nil
	}
	if json.Valid(data) {
		return errors.New("invalid UTF-8: JSON text must be UTF-8")
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return fmt.Errorf("invalid JSON")
}
