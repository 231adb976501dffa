package envelope

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/internal/jsonx"
)

// Call is the body of a call message: the tool's arguments plus the
// caller's wishes for this one call. Only Args is required on the wire.
type Call struct {
	// Args is the tool's arguments: a JSON object.
	Args json.RawMessage `json:"args"`
	// DryRun asks the tool to report what it would do without doing it.
	DryRun bool `json:"dry_run,omitempty"`
	// Page asks for all pages or for the page at a cursor.
	Page *Page `json:"page,omitempty"`
	// ResponseFormat constrains the shape of the terminal result.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// Page selects pagination: either every page merged, or one page by cursor.
type Page struct {
	All    bool   `json:"all,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// UnmarshalJSON reads a call body: args must be a JSON object; page must be
// {"all":true} or {"cursor":"…"}; response_format must be valid.
func (c *Call) UnmarshalJSON(data []byte) error {
	out, err := parseCall(data, true)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// ParseCall decodes a call body like UnmarshalJSON, but Args aliases data
// instead of copying it: for callers that own the buffer, such as a NATS
// message handler (nats.go gives every message its own payload).
func ParseCall(data []byte) (Call, error) { return parseCall(data, false) }

func parseCall(data []byte, copyArgs bool) (Call, error) {
	if err := jsonx.Check(data); err != nil {
		return Call{}, fmt.Errorf("call: %w", err)
	}
	var out Call
	var haveArgs bool
	err := jsonx.ScanRawMembers(data, func(name, v []byte) error {
		switch string(name) {
		case "args":
			if !jsonx.IsObject(v) {
				return errors.New("call: field args: want a JSON object")
			}
			out.Args = json.RawMessage(v)
			if copyArgs {
				out.Args = append(json.RawMessage(nil), v...)
			}
			haveArgs = true
		case "dry_run":
			switch string(v) {
			case "true":
				out.DryRun = true
			case "false", "null":
			default:
				return errors.New("call: field dry_run: want a boolean")
			}
		case "page":
			if jsonx.IsNull(v) {
				return nil
			}
			var p Page
			if err := json.Unmarshal(v, &p); err != nil {
				return fieldError("call", "page", err)
			}
			if p.All == (p.Cursor != "") {
				return errors.New(`call: field page: want {"all":true} or {"cursor":"…"}`)
			}
			out.Page = &p
		case "response_format":
			if jsonx.IsNull(v) {
				return nil
			}
			var rf ResponseFormat
			if err := json.Unmarshal(v, &rf); err != nil {
				return fieldError("call", "response_format", err)
			}
			out.ResponseFormat = &rf
		}
		return nil
	})
	if errors.Is(err, jsonx.ErrNotObject) {
		return Call{}, errors.New("call: want a JSON object")
	}
	if err != nil {
		return Call{}, err
	}
	if !haveArgs {
		return Call{}, errors.New("call: field args is required")
	}
	return out, nil
}

// MarshalJSON writes the call body, optional fields omitted.
func (c Call) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil) }

// AppendJSON appends the call body's JSON to b (the caller's hot path).
func (c Call) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"args":`...)
	if len(c.Args) == 0 {
		b = append(b, "{}"...)
	} else {
		b = append(b, c.Args...)
	}
	if c.DryRun {
		b = append(b, `,"dry_run":true`...)
	}
	var err error
	if c.Page != nil {
		if b, err = appendValue(b, "page", c.Page); err != nil {
			return nil, err
		}
	}
	if c.ResponseFormat != nil {
		if b, err = appendValue(b, "response_format", c.ResponseFormat); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
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
		if !jsonx.IsObject(r.JSONSchema.Schema) {
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
