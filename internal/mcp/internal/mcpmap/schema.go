package mcpmap

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/textcut"
)

// notePrefix starts the $comment the bridge writes into a schema it had
// to change, so the catalogue shows what the server said and what the
// mesh enforces instead.
const notePrefix = "toolmesh bridge: "

// NormaliseInput turns an MCP tool's inputSchema into a mesh input schema
// (an object schema the mesh can compile). Servers in the wild list
// schemas without "type" (a zero-argument tool's {} or {"properties":{}}),
// the boolean schema true, or a type list; MCP arguments are always a JSON
// object, so each becomes an object schema and the change is written into
// the schema's $comment, as is each reference to a schema outside it,
// which the mesh does not follow (dropOuterRefs). A schema no object can
// satisfy, or one that does not compile, is an error: the tool cannot be
// hosted.
func NormaliseInput(raw json.RawMessage) (json.RawMessage, []string, error) {
	schema, changes, err := asObjectSchema(raw, "inputSchema")
	if err != nil {
		return nil, nil, err
	}
	switch t := schema["type"].(type) {
	case nil:
		schema["type"] = "object"
		changes = append(changes, `inputSchema has no "type"; "type":"object" added (MCP arguments are always an object)`)
	case string:
		if t != "object" {
			return nil, nil, fmt.Errorf(`inputSchema has "type":%q, which no argument object can match`, t)
		}
	case []any:
		if !slices.Contains(t, any("object")) {
			return nil, nil, fmt.Errorf(`inputSchema "type":%v does not include "object", which MCP arguments always are`, t)
		}
		schema["type"] = "object"
		changes = append(changes, fmt.Sprintf(`inputSchema "type":%s narrowed to "object" (MCP arguments are always an object)`, compact(t)))
	default:
		return nil, nil, fmt.Errorf(`inputSchema "type" is %s, not a type name`, compact(t))
	}
	changes = append(changes, dropOuterRefs(schema, "")...)
	return finish(schema, changes, "inputSchema")
}

// dropOuterRefs removes from schema (in place) every "$ref" that points
// outside it — a URL or a file — and returns a change for each: the mesh
// never fetches a schema, so what such a reference names is left for the
// server to judge (the MCP definition the gateway lists keeps it). A
// reference within the schema ("#…") stays.
func dropOuterRefs(v any, at string) []string {
	var changes []string
	switch n := v.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
			delete(n, "$ref")
			changes = append(changes, fmt.Sprintf(`"$ref":%q at %q not followed (the mesh never fetches a schema); the server judges what it names`, ref, "/"+strings.TrimPrefix(at, "/")))
		}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			changes = append(changes, dropOuterRefs(n[k], at+"/"+k)...)
		}
	case []any:
		for i, item := range n {
			changes = append(changes, dropOuterRefs(item, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return changes
}

// NormaliseOutput turns an MCP tool's outputSchema (absent: nil) into the
// mesh output schema, which describes the result's structuredContent. The
// boolean schema true becomes {}, a reference outside the schema is
// dropped (dropOuterRefs); false, or a schema that does not compile, is
// an error.
func NormaliseOutput(raw json.RawMessage) (json.RawMessage, []string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	schema, changes, err := asObjectSchema(raw, "outputSchema")
	if err != nil {
		return nil, nil, err
	}
	changes = append(changes, dropOuterRefs(schema, "")...)
	return finish(schema, changes, "outputSchema")
}

// asObjectSchema decodes a schema that may be absent, a boolean or an
// object into an object, recording any change.
func asObjectSchema(raw json.RawMessage, field string) (map[string]any, []string, error) {
	trimmed := strings.TrimSpace(string(raw))
	switch trimmed {
	case "", "null":
		return map[string]any{}, []string{field + " absent; any object accepted"}, nil
	case "true":
		return map[string]any{}, []string{field + ` is the boolean schema true; written as the equivalent object schema {}`}, nil
	case "false":
		return nil, nil, fmt.Errorf("%s is the boolean schema false, which no value matches: no call could succeed", field)
	}
	var schema map[string]any
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.UseNumber() // 2^53+1 stays 2^53+1
	if err := dec.Decode(&schema); err != nil || schema == nil {
		if err == nil {
			err = fmt.Errorf("got %s", textcut.Clip(trimmed, 40))
		}
		return nil, nil, fmt.Errorf("%s is not a JSON Schema (an object or a boolean): %v", field, err)
	}
	return schema, nil, nil
}

// finish records the changes in $comment (keeping the server's own
// comment after ours), encodes the schema and checks that it compiles.
func finish(schema map[string]any, changes []string, field string) (json.RawMessage, []string, error) {
	if len(changes) > 0 {
		note := notePrefix + strings.Join(changes, "; ")
		if own, ok := schema["$comment"].(string); ok && own != "" {
			note += ". The server's comment: " + own
		}
		schema["$comment"] = note
	}
	out, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", field, err)
	}
	if _, err := envelope.CompileSchema(out); err != nil {
		return nil, nil, fmt.Errorf("%s does not compile: %v", field, err)
	}
	return out, changes, nil
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
