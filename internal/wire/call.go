package wire

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Call is the body of a call message: the tool's arguments plus the
// caller's wishes for this one call. Only Args is required on the wire.
//
// P and F are the types of the page and response_format members
// (envelope.Page and envelope.ResponseFormat): wire frames the body and
// checks a page's shape, and each member's own JSON methods encode and
// validate it, so wire needs no public package of the module.
type Call[P, F any] struct {
	// Args is the tool's arguments: a JSON object.
	Args json.RawMessage `json:"args"`
	// DryRun asks the tool to report what it would do without doing it.
	DryRun bool `json:"dry_run,omitempty"`
	// Page asks for all pages or for the page at a cursor.
	Page *P `json:"page,omitempty"`
	// ResponseFormat constrains the shape of the terminal result.
	ResponseFormat *F `json:"response_format,omitempty"`
}

// UnmarshalJSON reads a call body: args must be a JSON object; page must be
// {"all":true} or {"cursor":"…"}; response_format must be valid.
func (c *Call[P, F]) UnmarshalJSON(data []byte) error {
	out, err := parseCall[P, F](data, true)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// ParseCall decodes a call body like UnmarshalJSON, but Args aliases data
// instead of copying it: for callers that own the buffer, such as a NATS
// message handler (nats.go gives every message its own payload).
func ParseCall[P, F any](data []byte) (Call[P, F], error) { return parseCall[P, F](data, false) }

func parseCall[P, F any](data []byte, copyArgs bool) (Call[P, F], error) {
	if err := Check(data); err != nil {
		return Call[P, F]{}, fmt.Errorf("call: %w", err)
	}
	var out Call[P, F]
	var haveArgs bool
	err := ScanRawMembers(data, func(name, v []byte) error {
		switch string(name) {
		case "args":
			if !IsObject(v) {
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
			if IsNull(v) {
				return nil
			}
			p, err := parsePage[P](v)
			if err != nil {
				return err
			}
			out.Page = p
		case "response_format":
			if IsNull(v) {
				return nil
			}
			var rf F
			if err := json.Unmarshal(v, &rf); err != nil {
				return fmt.Errorf("call: field response_format: %w", err)
			}
			out.ResponseFormat = &rf
		}
		return nil
	})
	if errors.Is(err, ErrNotObject) {
		return Call[P, F]{}, errors.New("call: want a JSON object")
	}
	if err != nil {
		return Call[P, F]{}, err
	}
	if !haveArgs {
		return Call[P, F]{}, errors.New("call: field args is required")
	}
	return out, nil
}

// MarshalJSON writes the call body, optional fields omitted.
func (c Call[P, F]) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil) }

// AppendJSON appends the call body's JSON to b (the caller's hot path).
func (c Call[P, F]) AppendJSON(b []byte) ([]byte, error) {
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
		if b, err = appendMember(b, "page", c.Page); err != nil {
			return nil, err
		}
	}
	if c.ResponseFormat != nil {
		if b, err = appendMember(b, "response_format", c.ResponseFormat); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// pageShape is the page member as the protocol constrains it: all pages
// or the page at a cursor, never both or neither.
type pageShape struct {
	All    bool   `json:"all"`
	Cursor string `json:"cursor"`
}

// parsePage decodes a page member into P, then checks its shape. P
// decodes first, so a member of the wrong type is reported in P's words.
func parsePage[P any](v []byte) (*P, error) {
	var p P
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, fmt.Errorf("call: field page: %w", err)
	}
	var shape pageShape
	if err := json.Unmarshal(v, &shape); err != nil {
		return nil, fmt.Errorf("call: field page: %w", err)
	}
	if shape.All == (shape.Cursor != "") {
		return nil, errors.New(`call: field page: want {"all":true} or {"cursor":"…"}`)
	}
	return &p, nil
}

// appendMember appends ,"name":<v as JSON> to b.
func appendMember(b []byte, name string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	b = append(append(append(b, ',', '"'), name...), '"', ':')
	return append(b, enc...), nil
}
