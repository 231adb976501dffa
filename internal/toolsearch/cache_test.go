package toolsearch

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
)

// tool is a catalogue tool as a holder keeps it: its spec and how many
// workers host it (a catalog.Tool's Instances).
type tool struct {
	Spec      envelope.ToolSpec
	Instances int
}

func toolSpec(t *tool) *envelope.ToolSpec { return &t.Spec }

// searchFixture is the catalogue package catalog's search tests rank: the
// bridged reference MCP servers' tools beside the demo tools.
func searchFixture(t testing.TB) []tool {
	t.Helper()
	b, err := os.ReadFile("../../catalog/testdata/search_catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var specs []envelope.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		t.Fatal(err)
	}
	var cat []tool
	for _, s := range specs {
		cat = append(cat, tool{Spec: s, Instances: 1})
	}
	return cat
}

// A Cache keeps its index while the catalogue's tools read the
// same (their hosts may change, and hits show them as they are now), and
// builds a new one when a tool's words change or a tool comes or goes.
func TestSearchIndexIsKeptPerCatalogueRevision(t *testing.T) {
	withTool := func(cat []tool, name string, edit func(*tool)) []tool {
		out := slices.Clone(cat)
		for i := range out {
			if out[i].Spec.Name == name {
				edit(&out[i])
			}
		}
		return out
	}
	base := searchFixture(t)
	cases := []struct {
		name  string
		next  []tool
		query string
		kept  bool
		first string // the first hit's name, "" for no hit
		hosts int    // its instances
	}{
		{"same catalogue", base, "read a file", true, "fs.read_file", 1},
		{"more hosts", withTool(base, "fs.read_file", func(t *tool) { t.Instances = 7 }), "read a file", true, "fs.read_file", 7},
		{"description changed", withTool(base, "fs.read_file", func(t *tool) { t.Spec.Description = "deploy to kubernetes" }), "kubernetes", false, "fs.read_file", 1},
		{"argument renamed", withTool(base, "echo", func(t *tool) {
			t.Spec.InputSchema = json.RawMessage(`{"type":"object","properties":{"kubeconfig":{"type":"string"}}}`)
		}), "kubeconfig", false, "echo", 1},
		{"tool gone", base[1:], base[0].Spec.Name, false, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sc Cache[tool]
			first := sc.index(base, toolSpec)
			ix := sc.index(tc.next, toolSpec)
			if kept := sc.last == first; kept != tc.kept {
				t.Fatalf("index kept=%v, want %v", kept, tc.kept)
			}
			hits := ix.Search(tc.query)
			if want := New(tc.next, toolSpec).Search(tc.query); !reflect.DeepEqual(hits, want) {
				t.Fatalf("%q: the kept index ranks %d hits unlike a fresh one's %d", tc.query, len(hits), len(want))
			}
			switch {
			case tc.first == "" && len(hits) > 0 && hits[0].Tool.Spec.Name == base[0].Spec.Name:
				t.Fatalf("%q: found %s, which is gone", tc.query, base[0].Spec.Name)
			case tc.first != "" && (len(hits) == 0 || hits[0].Tool.Spec.Name != tc.first || hits[0].Tool.Instances != tc.hosts):
				t.Fatalf("%q: hits %+v, want %s first with %d instances", tc.query, hits, tc.first, tc.hosts)
			}
		})
	}
}
