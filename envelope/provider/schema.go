package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// obj is a decoded JSON object; numbers stay json.Number so they are
// re-encoded exactly as given.
type obj = map[string]any

// decodeJSON decodes b keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	if !json.Valid(b) {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("not valid JSON")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// mustJSON encodes a value built from decoded JSON; it cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("provider: re-encoding decoded JSON: %v", err))
	}
	return b
}

// copyObj returns a shallow copy of o.
func copyObj(o obj) obj {
	out := make(obj, len(o))
	for k, v := range o {
		out[k] = v
	}
	return out
}

// sortedKeys returns o's keys in order, for deterministic output.
func sortedKeys(o obj) []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ptrJoin appends a token to a JSON pointer (RFC 6901 escaping).
func ptrJoin(ptr, tok string) string {
	return ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// resolveRef resolves a local $ref ("#", "#/$defs/x", any "#/…" pointer)
// against root. Remote references are not followed: the mesh refuses them
// when it compiles a schema, so none reaches here from a valid ToolSpec.
func resolveRef(root any, ref string) (any, error) {
	if ref == "#" {
		return root, nil
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q is not a local JSON pointer", ref)
	}
	cur := root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := cur.(type) {
		case obj:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q: no member %q", ref, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("$ref %q: no element %q", ref, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

// typeList returns a schema's "type" as a list (nil when absent).
func typeList(o obj) []string {
	switch t := o["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func hasType(o obj, t string) bool {
	for _, x := range typeList(o) {
		if x == t {
			return true
		}
	}
	return false
}

// requiredSet returns the names in a schema's "required".
func requiredSet(o obj) map[string]bool {
	out := map[string]bool{}
	if r, ok := o["required"].([]any); ok {
		for _, e := range r {
			if s, ok := e.(string); ok {
				out[s] = true
			}
		}
	}
	return out
}

// mergeRef returns the $ref target with the node's sibling keywords laid
// over it (siblings win), which is what a $ref with siblings means for
// the keywords the providers understand.
func mergeRef(target obj, node obj) obj {
	out := copyObj(target)
	for k, v := range node {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

// refChain renders a cycle for a report: a → b → a.
func refChain(stack []string, ref string) string {
	return strings.Join(append(append([]string(nil), stack...), ref), " → ")
}
