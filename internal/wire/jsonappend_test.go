package wire

import (
	"encoding/json"
	"testing"
)

// FuzzAppendStringAgrees holds AppendString to encoding/json's Marshal of
// a string, byte for byte: HTML escapes, control characters, invalid
// UTF-8 and the JavaScript line separators included.
func FuzzAppendStringAgrees(f *testing.F) {
	for _, s := range []string{"", "plain", `a "quoted" \ back`, "<b> & </b>", "\b\f\n\r\t\x00\x1f\x7f",
		"héllo ✓ \U0001F600", "bad \xff\xfe utf-8", "\xc0\xaf", "line\u2028para\u2029", "longer than eight <&> bytes\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got[1:], want)
		}
	})
}
