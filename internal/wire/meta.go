package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Version is the version of the wire protocol this package speaks
// (docs/protocol.md). It is the digit of the tag that starts every
// metadata line and reply frame: "tm2".
const Version = 2

// wireTag starts a v2 metadata line or reply frame.
const wireTag = "tm2"

// MaxMetaLine bounds a call's metadata line, newline included: a caller
// cannot buy unbounded parsing or state with it.
const MaxMetaLine = 16 << 10

// Metadata keys of a call (protocol v2, §4). Unknown keys are ignored, so
// a later minor revision can add keys that older workers skip.
const (
	MetaID          = "id"          // call id: 1-128 of [A-Za-z0-9_-]
	MetaCaller      = "caller"      // caller id: the caller proves itself alive
	MetaMode        = "mode"        // unary | stream
	MetaTimeout     = "timeout"     // remaining budget, ms
	MetaWindow      = "window"      // initial event credit (stream mode)
	MetaInterval    = "interval"    // heartbeat interval the caller expects, ms
	MetaIdempotency = "idem"        // idempotency key
	MetaBearer      = "bearer"      // bearer token, redacted from everything the worker reports
	MetaTraceparent = "traceparent" // W3C Trace Context
	MetaTracestate  = "tracestate"
	MetaBaggage     = "baggage" // W3C Baggage
	MetaAsk         = "ask"     // "1": the caller answers questions (§23)
	// MetaPickup is the wall-clock time (unix ms) after which a worker
	// that reads the call refuses it unrun (docs/protocol.md §8.2).
	MetaPickup = "pickup"
	// MetaFold is "1": a stream call whose caller wants the result a unary
	// call of the tool returns, so the handler runs as for a unary call
	// (docs/protocol.md §6).
	MetaFold = "fold"
	// MetaMaybe is "1": the caller accepts that a call lost unnamed is
	// reported ran "maybe", so a worker whose own spec of the tool allows
	// it (idempotent or read-only), or a call with an idempotency key, may
	// start the call without waiting for the server to confirm the
	// heartbeat naming it (docs/protocol.md §8.2).
	MetaMaybe = "maybe"
	// MetaSpec is the digest (SpecDigest) of the tool spec the caller
	// validated or offered the call against: a worker whose own spec of
	// the tool has another digest refuses the call unrun with
	// tool_conflict (docs/protocol.md §14.1).
	MetaSpec = "spec"
	// MetaServerArgs is "1": the caller speaks for an MCP client of a
	// bridged MCP server, so the args of a tool whose spec has mcp go to
	// the server to judge, unchecked against input_schema (the server
	// answers a refusal in its own words); other tools' args are checked
	// as ever (docs/protocol.md §4.1).
	MetaServerArgs = "server_args"
)

// ErrVersion is the error of a metadata line or frame of a protocol
// version this package does not speak.
var ErrVersion = fmt.Errorf("unsupported wire protocol version (this side speaks %d)", Version)

// SplitCall splits a call body into its metadata line (without the tag and
// the newline; nil when the body has none) and the JSON object that
// follows. A body that begins with '{' (or JSON whitespace and then '{')
// has no metadata: a plain `nats req` stays a valid call.
func SplitCall(body []byte) (meta, rest []byte, err error) {
	if len(body) == 0 || !isTagStart(body) {
		return nil, body, nil
	}
	nl := bytes.IndexByte(body, '\n')
	if nl < 0 || nl >= MaxMetaLine {
		if nl < 0 && len(body) < MaxMetaLine {
			return nil, nil, errors.New("metadata line has no end (want a newline before the JSON body)")
		}
		return nil, nil, fmt.Errorf("metadata line longer than %d bytes", MaxMetaLine)
	}
	line := body[:nl]
	if err := checkTag(line); err != nil {
		return nil, nil, err
	}
	return line[len(wireTag):], body[nl+1:], nil
}

// isTagStart reports whether b begins like a metadata line or frame: "tm"
// and a digit. Anything else is JSON (or garbage the JSON parser names).
func isTagStart(b []byte) bool {
	return len(b) >= 3 && b[0] == 't' && b[1] == 'm' && b[2] >= '0' && b[2] <= '9'
}

// checkTag checks the version tag at the start of line.
func checkTag(line []byte) error {
	end := 2
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	if string(line[:end]) != wireTag {
		return fmt.Errorf("%w: got %.16q", ErrVersion, line[:end])
	}
	if end < len(line) && line[end] != ' ' {
		return fmt.Errorf("malformed metadata line: want a space after %q", wireTag)
	}
	return nil
}

// EachPair calls fn for every key=value pair of a metadata line or frame
// line (the part after the tag), in order, with the value still
// percent-encoded; both alias line. It stops at fn's first error, and
// fails on a pair without '='.
func EachPair(line []byte, fn func(key, value []byte) error) error {
	for len(line) > 0 {
		if line[0] == ' ' {
			line = line[1:]
			continue
		}
		end := bytes.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		pair := line[:end]
		line = line[end:]
		eq := bytes.IndexByte(pair, '=')
		if eq <= 0 {
			return fmt.Errorf("malformed metadata pair %.40q: want key=value", pair)
		}
		if err := fn(pair[:eq], pair[eq+1:]); err != nil {
			return err
		}
	}
	return nil
}

// AppendPair appends " key=value" to b, percent-encoding every byte of
// value that is not printable ASCII, and '%' itself.
func AppendPair(b []byte, key, value string) []byte {
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c <= ' ' || c >= 0x7f || c == '%' {
			const hex = "0123456789ABCDEF"
			b = append(b, '%', hex[c>>4], hex[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return b
}

// AppendIntPair appends " key=n" to b.
func AppendIntPair(b []byte, key string, n int64) []byte {
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	return strconv.AppendInt(b, n, 10)
}

// Unescape decodes a percent-encoded value. A value without '%' is
// returned as a string without further work.
func Unescape(v []byte) (string, error) {
	if bytes.IndexByte(v, '%') < 0 {
		return string(v), nil
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			out = append(out, v[i])
			continue
		}
		if i+2 >= len(v) || unhex(v[i+1]) < 0 || unhex(v[i+2]) < 0 {
			return "", fmt.Errorf("malformed percent-encoding in %.40q", v)
		}
		out = append(out, byte(unhex(v[i+1])<<4|unhex(v[i+2])))
		i += 2
	}
	return string(out), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// AppendMetaStart appends the tag that opens a call's metadata line; the
// caller appends pairs and then a newline and the JSON body.
func AppendMetaStart(b []byte) []byte { return append(b, wireTag...) }

// Digits parses a non-negative decimal integer of at most 15 digits (no
// sign, no space): the shape of every count and millisecond value on the
// wire. Values are saturated by their users, never overflowed.
func Digits(v []byte) (int64, error) {
	if len(v) == 0 || len(v) > 15 {
		return 0, fmt.Errorf("want 1-15 decimal digits, got %.20q", v)
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("want a non-negative decimal integer, got %.20q", v)
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}
