package textcut

import "unicode/utf8"

// Head returns the longest prefix of s of at most n bytes that ends on a
// rune boundary, and whether it cut anything.
func Head(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	// Back off over at most one character's continuation bytes; text that
	// is not UTF-8 there is cut where it stands.
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i], true
		}
	}
	return s[:n], true
}

// Tail returns the longest suffix of s of at most n bytes that starts on a
// rune boundary, and whether it cut anything.
func Tail(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	start := len(s) - max(n, 0)
	for i := start; i < start+utf8.UTFMax; i++ {
		if i == len(s) {
			return "", true // the last character alone is longer than n
		}
		if utf8.RuneStart(s[i]) {
			return s[i:], true
		}
	}
	return s[start:], true
}

// Clip returns s, or when it is longer than n bytes its Head of n bytes
// followed by "…".
func Clip(s string, n int) string {
	if h, cut := Head(s, n); cut {
		return h + "…"
	}
	return s
}
