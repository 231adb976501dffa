package worker

import (
	"encoding/json"
	"errors"
	"fmt"
)

// mcpStructured checks a result of a tool whose spec sets MCPResult (an
// MCP tool result: content blocks, optional structuredContent and _meta)
// and returns its structuredContent (nil when absent), which the tool's
// output schema describes.
func mcpStructured(data json.RawMessage) (json.RawMessage, error) {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(data, &res); err != nil || res == nil {
		return nil, errors.New(`an MCP result must be an object {"content": [...], "structuredContent": {...}}`)
	}
	for name := range res {
		if name != "content" && name != "structuredContent" && name != "_meta" {
			return nil, fmt.Errorf("an MCP result has no member %q (content, structuredContent and _meta only)", name)
		}
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(res["content"], &blocks); err != nil || blocks == nil {
		return nil, errors.New(`an MCP result's "content" must be an array of content blocks`)
	}
	for i, b := range blocks {
		if err := checkBlock(b); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
	}
	sc, ok := res["structuredContent"]
	if ok && (len(sc) == 0 || sc[0] != '{') {
		return nil, errors.New(`an MCP result's "structuredContent" must be an object`)
	}
	return sc, nil
}

// checkBlock checks one MCP content block's type and required members.
func checkBlock(b map[string]json.RawMessage) error {
	var kind string
	if err := json.Unmarshal(b["type"], &kind); err != nil {
		return errors.New(`a content block needs a string "type"`)
	}
	var need []string
	switch kind {
	case "text":
		need = []string{"text"}
	case "image", "audio":
		need = []string{"data", "mimeType"}
	case "resource":
		need = []string{"resource"}
	case "resource_link":
		need = []string{"uri", "name"}
	default:
		return fmt.Errorf("unknown content block type %q (text, image, audio, resource, resource_link)", kind)
	}
	for _, m := range need {
		if _, ok := b[m]; !ok {
			return fmt.Errorf("a %s block needs %q", kind, m)
		}
	}
	return nil
}
