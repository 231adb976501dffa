package envelope

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Page selects pagination: either every page merged, or one page by cursor.
type Page struct {
	All    bool   `json:"all,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// ResponseFormatType names the three kinds of ResponseFormat.
type ResponseFormatType string

// The response format kinds.
const (
	FormatFree       ResponseFormatType = "free"
	FormatJSONObject ResponseFormatType = "json_object"
	FormatJSONSchema ResponseFormatType = "json_schema"
)

// ResponseFormat constrains the terminal result: free (anything), a JSON
// object, or JSON matching a schema. The wire shape is OpenAI's:
// {"type":"json_schema","json_schema":{"name":…,"schema":…,"strict":…}}.
type ResponseFormat struct {
	Type       ResponseFormatType `json:"type"`
	JSONSchema *JSONSchemaFormat  `json:"json_schema,omitempty"`
}

// JSONSchemaFormat is the json_schema variant's payload.
type JSONSchemaFormat struct {
	// Name is a short identifier; providers that need one use it.
	Name string `json:"name"`
	// Schema is the JSON Schema the result must satisfy.
	Schema json.RawMessage `json:"schema"`
	// Strict asks providers that support it for exact conformance.
	Strict bool `json:"strict,omitempty"`
}

// UnmarshalJSON reads a response format and checks its variant's fields.
func (r *ResponseFormat) UnmarshalJSON(data []byte) error {
	type plain ResponseFormat
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("response_format: %w", err)
	}
	rf := ResponseFormat(p)
	if err := rf.Validate(); err != nil {
		return err
	}
	*r = rf
	return nil
}

// Validate checks the variant and its fields.
func (r ResponseFormat) Validate() error {
	switch r.Type {
	case FormatFree, FormatJSONObject:
		if r.JSONSchema != nil {
			return fmt.Errorf("response_format: field json_schema is only for type json_schema, not %q", r.Type)
		}
	case FormatJSONSchema:
		if r.JSONSchema == nil {
			return errors.New("response_format: field json_schema is required for type json_schema")
		}
		if !validFormatName(r.JSONSchema.Name) {
			return fmt.Errorf("response_format: field json_schema.name: %q must be 1-64 of [A-Za-z0-9_-]", r.JSONSchema.Name)
		}
		if !wire.IsObject(r.JSONSchema.Schema) {
			return errors.New("response_format: field json_schema.schema: want a JSON Schema object")
		}
	case "":
		return errors.New("response_format: field type is required")
	default:
		return fmt.Errorf("response_format: field type: unknown %q (want free, json_object or json_schema)", r.Type)
	}
	return nil
}

func validFormatName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !isNameByte(c) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
