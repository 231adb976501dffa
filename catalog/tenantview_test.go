package catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// visibleSpecs keeps what may allows and never writes into the slice it
// is given (a spec set shared through the cache).
func TestVisibleSpecs(t *testing.T) {
	notFS := func(n string) bool { return !strings.HasPrefix(n, "fs.") }
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"all visible", []string{"a", "b"}, []string{"a", "b"}},
		{"first hidden", []string{"fs.a", "b", "c"}, []string{"b", "c"}},
		{"middle hidden", []string{"a", "fs.b", "c", "fs.d"}, []string{"a", "c"}},
		{"none visible", []string{"fs.a"}, []string{}},
		{"empty", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs := make([]envelope.ToolSpec, len(tc.in))
			for i, n := range tc.in {
				specs[i] = envelope.ToolSpec{Name: n}
			}
			orig := slices.Clone(specs)
			var got []string
			for _, s := range visibleSpecs(specs, notFS) {
				got = append(got, s.Name)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
				t.Fatalf("visibleSpecs(%v) = %v, want %v", tc.in, got, tc.want)
			}
			for i := range specs {
				if specs[i].Name != orig[i].Name {
					t.Fatalf("the input was changed: %v", specs)
				}
			}
		})
	}
}
