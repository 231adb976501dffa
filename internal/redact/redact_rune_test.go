package redact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Head and Tail cut on character boundaries: a cut never leaves half a
// UTF-8 character for a Problem's detail or a stderr tail.
func TestHeadAndTailKeepCharactersWhole(t *testing.T) {
	r := New("sekret")
	s := strings.Repeat("é", 10) + " sekret " + strings.Repeat("😀", 10)
	for n := 0; n <= len(s); n++ {
		h, _ := r.Head(s, n)
		tl, _ := r.Tail(s, n)
		if !utf8.ValidString(h) || !utf8.ValidString(tl) || len(h) > n || len(tl) > n {
			t.Fatalf("n=%d: head %q, tail %q", n, h, tl)
		}
		if strings.Contains(h, "sekret") || strings.Contains(tl, "sekret") {
			t.Fatalf("n=%d: the secret shows", n)
		}
	}
}
