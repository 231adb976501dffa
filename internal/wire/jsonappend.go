package wire

import (
	"math"
	"strconv"

	segjson "github.com/segmentio/encoding/json"
)

// AppendString appends s as a JSON string exactly as encoding/json
// writes it (HTML-safe: <, > and & escaped; invalid UTF-8 replaced by
// U+FFFD; U+2028 and U+2029 escaped), without reflection or allocation.
// It is segmentio's AppendEscape, as a hand-written escaper measured no
// faster (about 0.7x on a member name, about 1.1x on an event's message).
func AppendString(b []byte, s string) []byte {
	return segjson.AppendEscape(b, s, segjson.EscapeHTML)
}

// AppendFloat appends f as encoding/json writes a float64, or reports
// false for a value JSON cannot carry (NaN, ±Inf). It exists because
// segmentio's Append boxes the float into an interface
// (BenchmarkAppendFloat: about 1.5x, 0 allocations against 1).
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
