package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/toolsearch"
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
			hits := newSearchIndex(cat).Search(tc.query)
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
		if hits := newSearchIndex(cat).Search(q); len(hits) != 0 {
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
		for _, h := range newSearchIndex(cat).Search(q) {
			if _, _, surface := wire.SplitMCPSurface(h.Tool.Spec.Name, h.Tool.Spec.Tags); surface {
				t.Fatalf("%q found surface tool %s", q, h.Tool.Spec.Name)
			}
		}
	}
	if hits := newSearchIndex(cat).Search("read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
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

// BenchmarkSearchBuild ranks a catalogue of 5,000 and 50,000 tools (the
// fixture's real tools among generated ones) for one query, building its
// index (newSearchIndex).
func BenchmarkSearchBuild(b *testing.B) {
	for _, n := range []int{5_000, 50_000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			cat := searchFleet(b, n)
			for b.Loop() {
				if hits := newSearchIndex(cat).Search("read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
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
			var sc toolsearch.Cache[Tool]
			sc.Search(cat.Tools, toolSpec, "") // builds the index
			for b.Loop() {
				if hits := sc.Search(cat.Tools, toolSpec, "read a file"); len(hits) == 0 || hits[0].Tool.Spec.Name != "fs.read_file" {
					b.Fatal("read a file: fs.read_file not first")
				}
			}
		})
	}
}

// newSearchIndex indexes cat's tools as Catalog.Search does.
func newSearchIndex(cat Listing) *toolsearch.Index[Tool] { return toolsearch.New(cat.Tools, toolSpec) }
