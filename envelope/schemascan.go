package envelope

import "bytes"

// Strict scanning for the schema fast path: unlike scan.go, which may
// assume json.Valid has passed, these check the JSON grammar themselves,
// so the fast path accepts only what encoding/json would decode.

// scanString checks the JSON string starting at b[i] and returns the index
// just past its closing quote and whether it holds any escape.
func scanString(b []byte, i int) (end int, escaped, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, escaped, true
		case c < 0x20:
			return 0, false, false
		case c == '\\':
			n := escapeLen(b[j+1:])
			if n == 0 {
				return 0, false, false
			}
			escaped = true
			j += n
		}
	}
	return 0, false, false
}

// escapeLen is the length of the escape after a backslash at the start of
// b (0 when it is not one JSON allows).
func escapeLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1
	case 'u':
		if len(b) < 5 {
			return 0
		}
		for _, c := range b[1:5] {
			if !isHex(c) {
				return 0
			}
		}
		return 5
	}
	return 0
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks the JSON number starting at b[i]
// (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) and returns the index
// just past it.
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		i = digitsEnd(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digitsEnd(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digitsEnd(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// maxDigits and maxExponent bound the numbers the fast path compares:
// beyond them it asks the library, which compares with math/big.
const (
	maxDigits   = 40
	maxExponent = 400
)

// decimal is a JSON number's exact value, 0.d[0]d[1]…d[n-1] × 10^exp with
// d[0] ≠ '0' and no trailing zeros (n = 0 for zero), so two decimals
// compare by sign, exponent, then digits, with no allocation.
type decimal struct {
	neg bool
	n   int
	exp int
	d   [maxDigits]byte
}

// parse sets x from one valid JSON number token, reporting false when the
// number has more significant digits or a larger exponent than the bounds.
func (x *decimal) parse(b []byte) bool {
	*x = decimal{}
	i := 0
	if len(b) > 0 && b[0] == '-' {
		x.neg = true
		i++
	}
	zeros, frac := 0, false
	for ; i < len(b) && b[i] != 'e' && b[i] != 'E'; i++ {
		c := b[i]
		if c == '.' {
			frac = true
			continue
		}
		if !frac {
			x.exp++
		}
		switch {
		case c == '0' && x.n == 0:
			x.exp-- // a leading zero
		case c == '0':
			zeros++ // trailing, unless a digit follows
		default:
			if x.n+zeros >= maxDigits {
				return false
			}
			for ; zeros > 0; zeros-- {
				x.d[x.n] = '0'
				x.n++
			}
			x.d[x.n] = c
			x.n++
		}
	}
	e, ok := parseExponent(b[i:])
	if !ok {
		return false
	}
	x.exp += e
	if x.n == 0 {
		x.neg, x.exp = false, 0
	}
	return x.exp >= -maxExponent && x.exp <= maxExponent
}

// parseExponent reads an exponent part ("e-5", or nothing), bounded.
func parseExponent(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, true
	}
	b = b[1:]
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	b = bytes.TrimLeft(b, "0")
	if len(b) > 4 {
		return 0, false
	}
	e := 0
	for _, c := range b {
		e = e*10 + int(c-'0')
	}
	if neg {
		e = -e
	}
	return e, true
}

// isInt reports whether x has an integral value (1.0 and 1e2 do).
func (x *decimal) isInt() bool { return x.n <= x.exp || x.n == 0 }

// cmp compares x and y: -1, 0 or +1.
func (x *decimal) cmp(y *decimal) int {
	sx, sy := x.sign(), y.sign()
	switch {
	case sx != sy:
		if sx < sy {
			return -1
		}
		return 1
	case sx == 0:
		return 0
	}
	c := 0
	switch {
	case x.exp != y.exp:
		c = 1
		if x.exp < y.exp {
			c = -1
		}
	default:
		c = bytes.Compare(x.d[:x.n], y.d[:y.n])
	}
	return c * sx
}

func (x *decimal) sign() int {
	switch {
	case x.n == 0:
		return 0
	case x.neg:
		return -1
	}
	return 1
}
