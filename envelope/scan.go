package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/toolmesh/toolmesh/internal/jsonx"
)

// The hot paths (a call body on the worker, an event on the caller, a
// Response built from a result) decode small, flat objects. encoding/json's
// reflection decoder costs more there than the network round trip, so they
// validate the input once with json.Valid (which reuses pooled scanners)
// and then split the top-level object with the byte scanner below, which
// may assume well-formed JSON.

// errNotObject is returned when a document is valid JSON but not an object.
var errNotObject = errors.New("want a JSON object")

// scanMembers calls fn for each top-level member of the object data, in
// document order, with the member's decoded name and raw value. data must
// already be valid JSON.
func scanMembers(data []byte, fn func(name string, value []byte) error) error {
	return scanRawMembers(data, func(name, value []byte) error { return fn(string(name), value) })
}

// scanRawMembers is scanMembers with the name as bytes, valid only during
// the call: a `switch string(name)` on it costs no allocation, which
// matters on the per-message paths.
func scanRawMembers(data []byte, fn func(name, value []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for i < len(data) {
		end := stringEnd(data, i)
		name, err := unquoteBytes(data[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		vend := valueEnd(data, i)
		if err := fn(name, data[i:vend]); err != nil {
			return err
		}
		i = skipSpace(data, vend)
		if i < len(data) && data[i] == '}' {
			return nil
		}
		i = skipSpace(data, i+1) // the comma
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
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

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
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

// unquote decodes a raw JSON string; the common case (no escapes, valid
// UTF-8) is a plain copy, anything else goes through encoding/json.
func unquote(raw []byte) (string, error) {
	b, err := unquoteBytes(raw)
	return string(b), err
}

// unquoteBytes is unquote without the string: when raw has no escapes the
// result is a sub-slice of it.
func unquoteBytes(raw []byte) ([]byte, error) {
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

func isNull(raw []byte) bool { return len(raw) == 4 && string(raw) == "null" }

// validJSON reports whether data is one valid JSON document, with a
// decoder error describing the fault when it is not.
// JSON text must be UTF-8 (RFC 8259 §8.1): encoding/json's validator lets
// invalid bytes inside strings through, which would reach peers verbatim.
func validJSON(data []byte) error {
	if jsonx.Valid(data) {
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
