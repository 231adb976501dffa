package wire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// validCases are documents at the edges of the grammar, each with
// encoding/json's answer (plus RFC 8259's UTF-8).
var validCases = []struct {
	name string
	doc  string
}{
	{"object", `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
	{"string escapes", `"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"`},
	{"numbers", `[0,-0,1.5,-1.5e10,1E-2,123456789012345678901234567890]`},
	{"white space", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n"},
	{"empty", ``},
	{"only space", `   `},
	{"trailing comma", `[1,2,]`},
	{"leading zero", `01`},
	{"bare dot", `1.`},
	{"plus sign", `+1`},
	{"single quotes", `{'a':1}`},
	{"unquoted key", `{a:1}`},
	{"two documents", `{} {}`},
	{"bad escape", `"\x41"`},
	{"short unicode escape", `"\u12"`},
	{"control character", "\"a\x01b\""},
	{"raw newline in string", "\"a\nb\""},
	{"unterminated string", `"abc`},
	{"unterminated object", `{"a":1`},
	{"invalid UTF-8", "\"\xff\xfe\""},
	{"overlong UTF-8", "\"\xc0\xaf\""},
	{"surrogate in UTF-8", "\"\xed\xa0\x80\""},
	{"non-ASCII", `"héllo wörld ✓"`},
	{"literals", `[true,false,null]`},
	{"bad literal", `[tru]`},
	{"NaN", `NaN`},
	{"deep", strings.Repeat("[", 500) + strings.Repeat("]", 500)},
	{"long string", `"` + strings.Repeat("0123456789 ", 10000) + `"`},
	{"long string, escape at the end", `"` + strings.Repeat("x", 4097) + `\"` + `"`},
	{"long string, control inside", `"` + strings.Repeat("x", 4097) + "\x1f" + `"`},
	// The small-document validator's edges (see validGrammar).
	{"lone minus", `-`},
	{"minus then dot", `-.5`},
	{"exponent without digits", `1e`},
	{"exponent sign only", `1e+`},
	{"full number", `-0.5E-3`},
	{"zero then digits after minus", `-01`},
	{"bad hex in escape", `"\u12G4"`},
	{"escape at the end", `"\`},
	{"empty containers", `[{},[],{"a":[]}]`},
	{"comma without member", `{,}`},
	{"missing colon", `{"a" 1}`},
	{"missing value", `{"a":}`},
	{"number key", `{1:2}`},
	{"trailing comma in object", `{"a":1,}`},
	{"close mismatch", `[1}`},
	{"literal prefix", `nul`},
	{"literal with tail", `truex`},
	{"space inside members", "{ \"a\" :\t1 ,\r\n\"b\" : [ ] }"},
	{"small document at the size switch", `"` + strings.Repeat("x", smallDoc-2) + `"`},
}

// Valid answers as encoding/json's Valid does, plus UTF-8.
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte(tc.doc)
			want := json.Valid(b) && utf8.Valid(b)
			if got := Valid(b); got != want {
				t.Errorf("Valid(%.60q) = %v, encoding/json says %v", tc.doc, got, want)
			}
		})
	}
}

// FuzzValidAgrees holds the fast validator to encoding/json's answers.
func FuzzValidAgrees(f *testing.F) {
	for _, tc := range validCases {
		f.Add([]byte(tc.doc))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b) && utf8.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}
