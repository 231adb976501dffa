package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Every cut of every length keeps valid UTF-8 valid, keeps within the
// byte bound, and loses less than one character to the boundary.
func TestCutsLandOnRuneBoundaries(t *testing.T) {
	s := "aé€😀b" + strings.Repeat("ü", 3)
	for n := 0; n <= len(s)+1; n++ {
		h, hcut := Head(s, n)
		tl, tcut := Tail(s, n)
		for _, got := range []string{h, tl} {
			if !utf8.ValidString(got) || len(got) > n || len(got) < min(n, len(s))-(utf8.UTFMax-1) {
				t.Errorf("n=%d: %q (%d bytes) is not a whole-character cut", n, got, len(got))
			}
		}
		if !strings.HasPrefix(s, h) || !strings.HasSuffix(s, tl) || hcut != (n < len(s)) || tcut != (n < len(s)) {
			t.Errorf("n=%d: head %q (%v), tail %q (%v)", n, h, hcut, tl, tcut)
		}
	}
	if got := Clip("héllo", 2); got != "h…" {
		t.Errorf("Clip = %q, want h…", got)
	}
	if got := Clip("héllo", 10); got != "héllo" {
		t.Errorf("Clip of a short string = %q", got)
	}
}
