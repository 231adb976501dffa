package envelope

// The JSON Schema library compares numbers as exact fractions (math/big):
// an argument like {"n":1e999999} cost a worker 60–130 ms of CPU per call
// against any numeric constraint. Numbers are therefore bounded before
// the library sees them; JSON that nobody's float64 or int64 can hold
// anyway is refused as a violation of its own.
const (
	maxNumberDigits   = 1000 // digits of one number literal
	maxNumberExponent = 1000 // |exponent| of one number literal
)

// boundedNumbers reports whether every number literal in doc is within
// maxNumberDigits and maxNumberExponent. It does not check the JSON
// grammar (the library does); strings are skipped, escapes included.
func boundedNumbers(doc []byte) bool {
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			end, _, ok := scanString(doc, i)
			if !ok {
				return true // malformed: the library says so
			}
			i = end
		case c == '-' || isDigit(c):
			end, ok := boundedNumber(doc, i)
			if !ok {
				return false
			}
			i = end
		default:
			i++
		}
	}
	return true
}

// boundedNumber reads the number literal at doc[i], returning where it
// ends and whether it is within bounds.
func boundedNumber(doc []byte, i int) (int, bool) {
	start := i
	for i < len(doc) && (isDigit(doc[i]) || doc[i] == '-' || doc[i] == '.') {
		i++
	}
	if i-start > maxNumberDigits {
		return i, false
	}
	if i >= len(doc) || doc[i] != 'e' && doc[i] != 'E' {
		return i, true
	}
	i++
	if i < len(doc) && (doc[i] == '+' || doc[i] == '-') {
		i++
	}
	exp := 0
	for i < len(doc) && isDigit(doc[i]) {
		if exp = exp*10 + int(doc[i]-'0'); exp > maxNumberExponent {
			return i, false
		}
		i++
	}
	return i, true
}
