package caller

import (
	"strconv"
	"testing"
)

// FuzzParseChunk: a chunk mark is accepted only as i/n with 1 <= i <= n,
// and then says exactly that.
func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{"1/1", "2/3", "0/0", "3/2", "-1/2", "1/", "/1", "a/b", "1/2/3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, mark string) {
		i, n, ok := parseChunk(mark)
		if !ok {
			return
		}
		if i < 1 || i > n {
			t.Fatalf("%q accepted as %d/%d", mark, i, n)
		}
		if back, _, _ := parseChunk(strconv.Itoa(i) + "/" + strconv.Itoa(n)); back != i {
			t.Fatalf("%q does not round-trip", mark)
		}
	})
}
