package wire

// smallDoc is the size under which Valid checks a document with
// validGrammar instead of segmentio's SIMD validator: the vector code
// pays a fixed cost per document that only long strings earn back, and
// every call body and small result of the unary path is far under this.
// validGrammar exists for that (BenchmarkValid: about 2.5x segmentio's
// Valid on a call body, about 1.5x on a 1.5 KiB result).
const smallDoc = 2048

// maxDepth is encoding/json's limit on nested arrays and objects: a
// deeper document is not valid for it, so not for validGrammar either.
const maxDepth = 10000

// validGrammar reports whether b is one JSON document by RFC 8259's
// grammar, with encoding/json.Valid's answers (bytes at or above 0x80 in
// strings are left to Valid's UTF-8 check).
func validGrammar(b []byte) bool {
	i, ok := validValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// validValue checks the value at b[i:] (white space already skipped)
// inside depth containers, and returns the index past it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i+1)
	case c == '{' || c == '[':
		return validContainer(b, i, depth+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

// validContainer checks the object or array opening at b[i].
func validContainer(b []byte, i, depth int) (int, bool) {
	if depth > maxDepth {
		return i, false
	}
	object := b[i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = validString(b, i+1); !ok {
				return i, false
			}
			if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
		if i, ok = validValue(b, i, depth); !ok {
			return i, false
		}
		if i = skipWS(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case end:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// validString checks a string whose opening quote is before b[i].
func validString(b []byte, i int) (int, bool) {
	for i < len(b) {
		for i < len(b) && plainInString[b[i]] {
			i++
		}
		if i == len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(b)-i < 6 || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		default:
			i++
		}
	}
	return i, false
}

// plainInString marks the bytes a JSON string holds as they are: every
// byte from 0x20 up but the quote and the backslash. validString skips
// runs of them with one load a byte.
var plainInString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(b []byte, i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }

func digits(b []byte, i int) int {
	for isDigit(b, i) {
		i++
	}
	return i
}

// validNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case !isDigit(b, i):
		return i, false
	case b[i] == '0':
		i++
	default:
		i = digits(b, i)
	}
	if i < len(b) && b[i] == '.' {
		if i++; !isDigit(b, i) {
			return i, false
		}
		i = digits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !isDigit(b, i) {
			return i, false
		}
		i = digits(b, i)
	}
	return i, true
}
