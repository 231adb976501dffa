package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolmesh/toolmesh/envelope"
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
	Page *envelope.Page `json:"page,omitempty"`
	// ResponseFormat constrains the shape of the terminal result.
	ResponseFormat *envelope.ResponseFormat `json:"response_format,omitempty"`
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
			var p envelope.Page
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("call: field page: %w", err)
			}
			if p.All == (p.Cursor != "") {
				return errors.New(`call: field page: want {"all":true} or {"cursor":"…"}`)
			}
			out.Page = &p
		case "response_format":
			if jsonx.IsNull(v) {
				return nil
			}
			var rf envelope.ResponseFormat
			if err := json.Unmarshal(v, &rf); err != nil {
				return fmt.Errorf("call: field response_format: %w", err)
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

// appendMember appends ,"name":<v as JSON> to b.
func appendMember(b []byte, name string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	b = append(append(append(b, ',', '"'), name...), '"', ':')
	return append(b, enc...), nil
}
