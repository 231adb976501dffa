package provider

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares v, as indented JSON, with testdata/name.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, name, got, *update)
}

// fixtureSpecs loads testdata/specs.json.
func fixtureSpecs(t testing.TB) []envelope.ToolSpec {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "specs.json"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []envelope.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		t.Fatal(err)
	}
	return specs
}

// exportTargets are the provider/model pairs the goldens cover: every
// provider's current models, plus Gemini's legacy schema models.
var exportTargets = []struct {
	file string
	opts ExportOptions
}{
	{"openai", ExportOptions{Provider: OpenAI}},
	{"openai-responses", ExportOptions{Provider: OpenAIResponses}},
	{"anthropic", ExportOptions{Provider: Anthropic}},
	{"gemini", ExportOptions{Provider: Gemini}},
	{"gemini-legacy", ExportOptions{Provider: Gemini, Model: "gemini-2.0-flash"}},
	{"mcp", ExportOptions{Provider: MCP}},
}

func exportFixture(t testing.TB, o ExportOptions) *Toolset {
	t.Helper()
	ts, err := Export(fixtureSpecs(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// declarations counts the tools an export declares: one element of
// Tools each, but for Gemini, whose Tools is Tool[] of one Tool holding
// every functionDeclaration (and nothing else).
func declarations(t testing.TB, ts *Toolset) int {
	t.Helper()
	if ts.Provider != Gemini {
		return len(ts.Tools)
	}
	if len(ts.Tools) != 1 {
		t.Fatalf("gemini tools = %d Tools, want one holding every declaration", len(ts.Tools))
	}
	var tool map[string][]json.RawMessage
	if err := json.Unmarshal(ts.Tools[0], &tool); err != nil || len(tool) != 1 {
		t.Fatalf("gemini Tool %s: want only functionDeclarations (%v)", ts.Tools[0], err)
	}
	return len(tool["functionDeclarations"])
}

func TestExportGolden(t *testing.T) {
	for _, tc := range exportTargets {
		t.Run(tc.file, func(t *testing.T) {
			ts := exportFixture(t, tc.opts)
			golden(t, "export_"+tc.file+".json", ts)
			if n := declarations(t, ts); ts.Names.size() != n {
				t.Errorf("%d tools but %d names mapped", n, ts.Names.size())
			}
		})
	}
}
