package mcpmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputKeyword is the JSON Schema annotation that makes a question an MCP
// server's input requests (SEP-2322, docs/protocol.md §23.8): the
// question's schema has one property per request key, an object whose
// annotation holds the request ({"method","params"}) verbatim, and the
// accepted answer holds each key's response. A gateway serving a
// 2026-07-28 client passes the requests on under their own keys.
const InputKeyword = "x-mcp-input"

// InputsQuestion is the question of an MCP server's input requests: a
// message naming them, and the schema carrying each under its key.
func InputsQuestion(reqs mcp.InputRequestMap) (message string, schema json.RawMessage, err error) {
	raw, err := json.Marshal(reqs)
	if err != nil {
		return "", nil, err
	}
	var byKey map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byKey); err != nil {
		return "", nil, err
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	props := map[string]any{}
	var lines []string
	for _, k := range keys {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(byKey[k], &r)
		props[k] = map[string]any{"type": "object", InputKeyword: byKey[k]}
		lines = append(lines, fmt.Sprintf("%s (%s)", k, r.Method))
	}
	schema, err = json.Marshal(map[string]any{"type": "object", "properties": props, "required": keys})
	return "The MCP server asks for input: " + strings.Join(lines, ", "), schema, err
}

// QuestionInputs returns the input requests a question's schema carries
// (InputsQuestion), keyed, each {"method","params"}; false when the
// question is not one.
func QuestionInputs(schema json.RawMessage) (map[string]json.RawMessage, bool) {
	var s struct {
		Properties map[string]map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for k, p := range s.Properties {
		r, ok := p[InputKeyword]
		if !ok {
			return nil, false
		}
		out[k] = r
	}
	return out, true
}

// InputResponses decodes an accepted answer to an inputs question into
// the responses to send the server.
func InputResponses(content json.RawMessage) (mcp.InputResponseMap, error) {
	var m mcp.InputResponseMap
	if err := json.Unmarshal(content, &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, errors.New("the answer holds no input responses")
	}
	return m, nil
}
