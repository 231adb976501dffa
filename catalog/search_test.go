package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// searchFixture is a catalogue of the bridged reference MCP servers'
// tools (server-filesystem as fs., server-memory as memory., with their
// own descriptions and argument names) beside the demo tools.
func searchFixture(t testing.TB) Listing {
	t.Helper()
	b, err := os.ReadFile("testdata/search_catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	var specs []envelope.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		t.Fatal(err)
	}
	cat := Listing{}
	for _, s := range specs {
		cat.Tools = append(cat.Tools, Tool{Spec: s, Instances: 1})
	}
	return cat
}

func TestSearchRanksTheToolAnAgentMeans(t *testing.T) {
	cat := searchFixture(t)
	for _, tc := range []struct {
		query, first string
	}{
		{"read a file", "fs.read_file"},
		{"Read a file", "fs.read_file"},
		{"read an image", "fs.read_media_file"},
		{"list a directory", "fs.list_directory"},
		{"move or rename", "fs.move_file"},
		{"search the knowledge graph", "memory.search_nodes"},
		{"delete entities", "memory.delete_entities"},
		{"echo a message", "echo"},
		{"readFile", "fs.read_file"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			hits := newSearchIndex(cat).search(tc.query)
			if len(hits) == 0 || hits[0].Tool.Spec.Name != tc.first {
				names := []string{}
				for i, h := range hits {
					if i == 5 {
						break
					}
					names = append(names, h.Tool.Spec.Name)
				}
				t.Fatalf("%q: top hits %v, want %s first", tc.query, names, tc.first)
			}
		})
	}
}

func TestSearchLeavesOutToolsSharingNoWord(t *testing.T) {
	cat := searchFixture(t)
	for _, q := range []string{"", "the a of", "kubernetes"} {
		if hits := newSearchIndex(cat).search(q); len(hits) != 0 {
			t.Fatalf("%q matched %d tools, first %s", q, len(hits), hits[0].Tool.Spec.Name)
		}
	}
}

// A bridged server's surface tools (resources, prompts, completions) are
// MCP methods, not tools an agent looks for: search never returns them,
// even for a query naming their words.
func TestSearchLeavesOutMCPSurfaceTools(t *testing.T) {
	cat := searchFixture(t)
	for _, op := range []string{wire.MCPResourcesRead, wire.MCPResourcesList, wire.MCPPromptsGet} {
		cat.Tools = append(cat.Tools, Tool{Instances: 1, Spec: envelope.ToolSpec{Name: wire.MCPSurfaceName("fs", op),
			Title: op + " of MCP server fs", Description: "read a file resource of the MCP server",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string"}}}`), Tags: []string{"mcp", wire.MCPSurfaceTag}}})
	}
	for _, q := range []string{"read a file", "resources read", "prompts get", "uri"} {
		for _, h := range newSearchIndex(cat).search(q) {
			if _, _, surface := wire.SplitMCPSurface(h.Tool.Spec.Name, h.Tool.Spec.Tags); surface {
				t.Fatalf("%q found surface tool %s", q, h.Tool.Spec.Name)
			}
		}
	}
	if hits := newSearchIndex(cat).search("read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
		t.Fatalf("read a file: want fs.read_file first, got %d hits", len(hits))
	}
}

// searchFleet is the fixture's catalogue grown to n tools with generated
// ones.
func searchFleet(tb testing.TB, n int) Listing {
	cat := searchFixture(tb)
	for i := len(cat.Tools); i < n; i++ {
		cat.Tools = append(cat.Tools, Tool{Instances: 1, Spec: envelope.ToolSpec{Name: fmt.Sprintf("ns%d.tool%d", i/10, i%10),
			Description: "list the records of a table in a database, filtered", InputSchema: json.RawMessage(`{"type":"object","properties":{"table":{"type":"string"}}}`)}})
	}
	return cat
}

// A Catalog keeps its search index while the catalogue's tools read the
// same (their hosts may change, and hits show them as they are now), and
// builds a new one when a tool's words change or a tool comes or goes.
func TestSearchIndexIsKeptPerCatalogueRevision(t *testing.T) {
	withTool := func(cat Listing, name string, edit func(*Tool)) Listing {
		out := Listing{Tools: slices.Clone(cat.Tools)}
		for i := range out.Tools {
			if out.Tools[i].Spec.Name == name {
				edit(&out.Tools[i])
			}
		}
		return out
	}
	base := searchFixture(t)
	cases := []struct {
		name  string
		next  Listing
		query string
		kept  bool
		first string // the first hit's name, "" for no hit
		hosts int    // its instances
	}{
		{"same catalogue", base, "read a file", true, "fs.read_file", 1},
		{"more hosts", withTool(base, "fs.read_file", func(t *Tool) { t.Instances = 7 }), "read a file", true, "fs.read_file", 7},
		{"description changed", withTool(base, "fs.read_file", func(t *Tool) { t.Spec.Description = "deploy to kubernetes" }), "kubernetes", false, "fs.read_file", 1},
		{"argument renamed", withTool(base, "echo", func(t *Tool) {
			t.Spec.InputSchema = json.RawMessage(`{"type":"object","properties":{"kubeconfig":{"type":"string"}}}`)
		}), "kubeconfig", false, "echo", 1},
		{"tool gone", Listing{Tools: base.Tools[1:]}, base.Tools[0].Spec.Name, false, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sc SearchCache
			first := sc.index(base)
			ix := sc.index(tc.next)
			if kept := sc.last == first; kept != tc.kept {
				t.Fatalf("index kept=%v, want %v", kept, tc.kept)
			}
			hits := ix.search(tc.query)
			if want := newSearchIndex(tc.next).search(tc.query); !reflect.DeepEqual(hits, want) {
				t.Fatalf("%q: the kept index ranks %d hits unlike a fresh one's %d", tc.query, len(hits), len(want))
			}
			switch {
			case tc.first == "" && len(hits) > 0 && hits[0].Tool.Spec.Name == base.Tools[0].Spec.Name:
				t.Fatalf("%q: found %s, which is gone", tc.query, base.Tools[0].Spec.Name)
			case tc.first != "" && (len(hits) == 0 || hits[0].Tool.Spec.Name != tc.first || hits[0].Tool.Instances != tc.hosts):
				t.Fatalf("%q: hits %+v, want %s first with %d instances", tc.query, hits, tc.first, tc.hosts)
			}
		})
	}
}

// BenchmarkSearchBuild ranks a catalogue of 5,000 and 50,000 tools (the
// fixture's real tools among generated ones) for one query, building its
// index (newSearchIndex).
func BenchmarkSearchBuild(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			cat := searchFleet(b, n)
			for b.Loop() {
				if hits := newSearchIndex(cat).search("read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
					b.Fatal("read a file: fs.read_file not first")
				}
			}
		})
	}
}

// BenchmarkSearchKeptIndex is a repeated search of an unchanged
// catalogue (Search less its List): the kept index checked against the
// catalogue, then the query ranked.
func BenchmarkSearchKeptIndex(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			cat := searchFleet(b, n)
			var sc SearchCache
			sc.index(cat)
			for b.Loop() {
				if hits := sc.index(cat).search("read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
					b.Fatal("read a file: fs.read_file not first")
				}
			}
		})
	}
}
