package provider

import (
	"encoding/json"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Gemini 2.5 and later keep a response's keys in the schema's order; the
// gemini-2.0 models need that order spelled out. responseJsonSchema takes
// the non-standard propertyOrdering member for it (the API reference of
// GenerationConfig.responseJsonSchema, quoted in google.golang.org/genai's
// types.go: "The non-standard `propertyOrdering` property may also be
// set"), and Google's structured-output guide: "Gemini 2.0 requires an
// explicit propertyOrdering list".

// orderSubschemas applies withPropertyOrdering to the subschemas under
// keyword k: a map of them, a list of them, or one (items may also be a
// draft-07 list). Other keywords hold data or scalars and stay as they are.
func orderSubschemas(k string, v json.RawMessage) json.RawMessage {
	switch k {
	case "properties", "$defs", "definitions", "patternProperties", "dependentSchemas":
		return orderMembers(v)
	case "anyOf", "oneOf", "allOf", "prefixItems", "items", "additionalProperties", "not", "if", "then", "else",
		"contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems":
		return orderList(v)
	}
	return v
}

// withPropertyOrdering returns schema with propertyOrdering — the names
// of properties in the order the schema lists them — on every object
// schema that has properties and no ordering of its own. Keywords that
// hold data rather than schemas (enum, const, default, examples) are
// left as they are.
func withPropertyOrdering(schema json.RawMessage) json.RawMessage {
	if !wire.IsObject(schema) {
		return schema
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(schema, &o) != nil {
		return schema
	}
	names := memberNames(o["properties"]) // before the members are re-encoded
	for k, v := range o {
		o[k] = orderSubschemas(k, v)
	}
	if _, has := o["propertyOrdering"]; !has && len(names) > 0 {
		o["propertyOrdering"] = mustJSON(names)
	}
	return mustJSON(o)
}

// memberNames lists an object's member names in document order.
func memberNames(raw json.RawMessage) []string {
	var names []string
	if !wire.IsObject(raw) {
		return nil
	}
	_ = wire.ScanMembers(raw, func(name string, _ []byte) error {
		names = append(names, name)
		return nil
	})
	return names
}

// orderMembers applies withPropertyOrdering to each value of a map of
// subschemas.
func orderMembers(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if !wire.IsObject(raw) || json.Unmarshal(raw, &m) != nil {
		return raw
	}
	for k, v := range m {
		m[k] = withPropertyOrdering(v)
	}
	return mustJSON(m)
}

// orderList applies withPropertyOrdering to each element of a list of
// subschemas, or to raw itself when it is one schema.
func orderList(raw json.RawMessage) json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return withPropertyOrdering(raw)
	}
	for i, v := range list {
		list[i] = withPropertyOrdering(v)
	}
	return mustJSON(list)
}
