package providersdk

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP shapes decode into the MCP Go SDK's own types: tools with
// unknown members refused (mcp.Tool is a plain struct), results by the
// re-encode comparison (mcp.CallToolResult has its own decoder, which the
// standard library's DisallowUnknownFields does not reach).
func TestMCPShapesDecodeIntoSDKTypes(t *testing.T) {
	var ts struct {
		Tools []json.RawMessage `json:"tools"`
	}
	readGolden(t, "export_mcp.json", &ts)
	annotated := 0
	for i, raw := range ts.Tools {
		var tool mcp.Tool
		must(t, fmt.Sprintf("tool %d", i), raw, strictGenai(raw, &tool))
		if tool.Annotations != nil {
			annotated++
		}
	}
	if annotated == 0 {
		t.Error("no exported tool carried annotations")
	}
	var results []json.RawMessage
	readGolden(t, "results_mcp.json", &results)
	errors := 0
	for i, raw := range results {
		var r mcp.CallToolResult
		must(t, fmt.Sprintf("result %d", i), raw, roundTrip(raw, &r))
		if r.IsError {
			errors++
		}
	}
	if errors == 0 {
		t.Error("no result was an error; the goldens should include Problems")
	}
}
