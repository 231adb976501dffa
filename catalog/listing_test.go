package catalog

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// buildListing lists each tool once with every host in id order, whether
// its workers share one decoded spec set, hold equal copies, or disagree
// (the spec most give wins; the other is a conflict).
func TestBuildCatalogCountsEveryHost(t *testing.T) {
	set := []envelope.ToolSpec{{Name: "a.x", Description: "x"}, {Name: "a.y"}}
	copyOf := slices.Clone(set)
	other := []envelope.ToolSpec{{Name: "a.x", Description: "not x"}}
	cases := []struct {
		name      string
		entries   map[string][]envelope.ToolSpec
		x         []string // a.x's workers
		conflicts int
	}{
		{"one shared set", map[string][]envelope.ToolSpec{"w3": set, "w1": set, "w2": set}, []string{"w1", "w2", "w3"}, 0},
		{"equal copies", map[string][]envelope.ToolSpec{"w3": set, "w1": copyOf, "w2": set}, []string{"w1", "w2", "w3"}, 0},
		{"a conflict", map[string][]envelope.ToolSpec{"w3": set, "w1": other, "w2": set}, []string{"w1", "w2", "w3"}, 1},
		{"a worker with none", map[string][]envelope.ToolSpec{"w2": set, "w1": nil}, []string{"w2"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries := map[string]catalogEntry{}
			for id, tools := range tc.entries {
				entries[id] = catalogEntry{WorkerID: id, Tools: tools}
			}
			cat := buildListing(entries)
			if cat.Workers != len(tc.entries) || len(cat.Tools) != 2 || cat.Tools[0].Spec.Name != "a.x" {
				t.Fatalf("catalogue %+v", cat)
			}
			x := cat.Tools[0]
			if !reflect.DeepEqual(x.Workers, tc.x) || x.Instances != len(tc.x) || len(x.Conflicts) != tc.conflicts || x.Spec.Description != "x" {
				t.Fatalf("a.x: %+v, want workers %v and %d conflicts", x, tc.x, tc.conflicts)
			}
		})
	}
}

// BenchmarkBuildCatalog10k builds the catalogue of 10,000 workers of 5
// tools in 500 shared spec sets (the catalogue benchmark's fleet).
func BenchmarkBuildCatalog10k(b *testing.B) {
	sets := make([][]envelope.ToolSpec, 500)
	for i := range sets {
		for j := range 5 {
			sets[i] = append(sets[i], envelope.ToolSpec{Name: fmt.Sprintf("ns%d.tool%d", i, j)})
		}
	}
	entries := map[string]catalogEntry{}
	for w := range 10_000 {
		id := fmt.Sprintf("W%05d", w)
		entries[id] = catalogEntry{WorkerID: id, Tools: sets[w%500]}
	}
	for b.Loop() {
		if cat := buildListing(entries); len(cat.Tools) != 2_500 || cat.Tools[0].Instances != 20 {
			b.Fatalf("%d tools", len(cat.Tools))
		}
	}
}
