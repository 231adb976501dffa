package provider

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// checkNameMap asserts that m maps every name validly, reversibly and
// without collisions under rule, and survives its JSON form.
func checkNameMap(t *testing.T, rule nameRule, names []string, m NameMap) {
	t.Helper()
	seen := map[string]string{}
	for _, n := range names {
		p, ok := m.ProviderName(n)
		if !ok {
			t.Fatalf("%q not mapped", n)
		}
		if !rule.valid(p) {
			t.Fatalf("%q mapped to %q, which the provider refuses", n, p)
		}
		if other, dup := seen[p]; dup && other != n {
			t.Fatalf("%q and %q both map to %q", other, n, p)
		}
		seen[p] = n
		if back, ok := m.meshName(p); !ok || back != n {
			t.Fatalf("%q → %q → %q: not reversible", n, p, back)
		}
		if rule.valid(n) && p != n {
			t.Fatalf("%q is a valid provider name but was renamed %q", n, p)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back NameMap
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p, _ := m.ProviderName(n)
		if got, _ := back.meshName(p); got != n {
			t.Fatalf("JSON round trip lost %q", n)
		}
	}
}

func TestNameMapTable(t *testing.T) {
	long := strings.Repeat("a", 64) + "." + strings.Repeat("b", 63)
	cases := [][]string{
		{"fs.read", "fs_read"},
		{"a.b_c", "a_b.c", "a_b_c", "a.b.c"},
		{long, long[:120], long[:100] + "x"},
		{"9lives", "_x", "-dash"},
	}
	for _, names := range cases {
		for _, p := range providers() {
			checkNameMap(t, p.nameRule(), names, mapNames(p.nameRule(), names))
		}
	}
	// The mapping depends only on the set, not its order.
	a := mapNames(OpenAI.nameRule(), []string{"x.y", "x_y", "z"})
	b := mapNames(OpenAI.nameRule(), []string{"z", "x_y", "x.y"})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("order-dependent: %s vs %s", ja, jb)
	}
}

// FuzzNameMap: any set of valid mesh names maps validly, reversibly and
// without collisions for every provider. The input is split on spaces.
func FuzzNameMap(f *testing.F) {
	f.Add("fs.read fs_read")
	f.Add("a.b_c a_b.c a_b_c a.b.c")
	f.Add("9lives _x -dash " + strings.Repeat("q", 64) + "." + strings.Repeat("r", 63))
	f.Fuzz(func(t *testing.T, in string) {
		var names []string
		seen := map[string]bool{}
		for _, n := range strings.Fields(in) {
			if envelope.ValidateToolName(n) == nil && !seen[n] {
				names = append(names, n)
				seen[n] = true
			}
		}
		for _, p := range providers() {
			checkNameMap(t, p.nameRule(), names, mapNames(p.nameRule(), names))
		}
	})
}
