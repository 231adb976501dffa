package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// Response is what a unary call returns and what `toolmesh call` prints:
// {"id":…,"success":…} with Data's members flattened to the top level.
//
// Data is a JSON object whose bytes are kept verbatim (member order
// included). A result that cannot be flattened is carried whole as
// {"result": …}: one that is not an object, and one that is an object with
// a member named id or success (the result-collision rule of
// docs/protocol.md §5.6), which flattening would overwrite.
type Response struct {
	ID      string
	Success bool
	Data    json.RawMessage

	// checked is Data as it was when it was known to be valid JSON (a
	// result the caller validated on arrival): Get and MarshalJSON skip a
	// second validation pass while Data is still that slice. Data's bytes
	// are the response's own; change them by assigning a new slice.
	checked json.RawMessage
}

// members splits Data into its members, validating it first unless it
// is still the slice known to be valid.
func (r Response) members() ([]member, error) {
	if len(r.Data) > 0 && len(r.Data) == len(r.checked) && &r.Data[0] == &r.checked[0] {
		return scanObjectMembers(r.Data)
	}
	return objectMembers(r.Data)
}

// errReservedMember is returned when an error's extra members would
// overwrite id or success (a result with such members is wrapped instead).
var errReservedMember = errors.New(`data may not contain the members "id" or "success"`)

// reserved reports whether name is a Response's own member, which
// flattened data may not overwrite.
// Generic so the scanners' []byte names are compared without a copy.
func reserved[T ~string | ~[]byte](name T) bool {
	return string(name) == "id" || string(name) == "success"
}

// successResponse builds a success response with data merged at the top level.
func successResponse(id string, data json.RawMessage) (Response, error) {
	obj, err := asObject(data)
	if err != nil {
		return Response{}, err
	}
	return Response{ID: id, Success: true, Data: obj}, nil
}

// errorResponse builds an error response with code and message members.
func errorResponse(id string, code Code, message string) Response {
	r, _ := errorResponseWithData(id, code, message, nil)
	return r
}

// errorResponseWithData builds an error response with code, message and the
// extra members of extra (a JSON object) merged alongside them.
func errorResponseWithData(id string, code Code, message string, extra json.RawMessage) (Response, error) {
	head := appendErrorHead(make([]byte, 0, 32+len(message)), code, message)
	if len(extra) == 0 {
		return Response{ID: id, Data: head}, nil
	}
	members, err := objectMembers(extra)
	if err != nil {
		return Response{}, fmt.Errorf("extra: %w", err)
	}
	b := bytes.TrimSuffix(head, []byte("}"))
	for _, m := range members {
		switch {
		case reserved(m.name):
			return Response{}, errReservedMember
		case m.name == "code" || m.name == "message":
			return Response{}, fmt.Errorf("extra: member %q would overwrite the error's own", m.name)
		}
		b = append(b, ',')
		name, _ := json.Marshal(m.name) // JSON escapes, not Go's (\x01 is not JSON)
		b = append(b, name...)
		b = append(b, ':')
		b = append(b, m.value...)
	}
	return Response{ID: id, Data: append(b, '}')}, nil
}

// ProblemResponse is the error response for a Problem: code and message
// from it, and the whole Problem under "problem" so no detail is lost.
func ProblemResponse(id string, p *Problem) Response {
	problem, err := p.appendJSON(make([]byte, 0, 512))
	if err != nil {
		return errorResponse(id, p.Code, p.Error())
	}
	// Assembled directly rather than through errorResponseWithData: the
	// Problem's JSON is known valid and its one member name known safe,
	// and every failed call takes this path.
	b := appendErrorHead(make([]byte, 0, 48+len(p.Detail)+len(problem)), p.Code, p.Error())
	b = append(append(b[:len(b)-1], `,"problem":`...), problem...)
	return Response{ID: id, Data: append(b, '}')}
}

// appendErrorHead appends {"code":…,"message":…} as encoding/json would
// write that struct.
func appendErrorHead(b []byte, code Code, message string) []byte {
	b = wire.AppendString(append(b, `{"code":`...), string(code))
	return append(wire.AppendString(append(b, `,"message":`...), message), '}')
}

// ResponseFromEvent turns a call's terminal event into its Response.
func ResponseFromEvent(id string, ev ToolEvent) (Response, error) {
	switch ev.Type {
	case EventResult:
		if ev.validData {
			obj, err := asObjectValid(ev.Data)
			if err != nil {
				return Response{}, err
			}
			return Response{ID: id, Success: true, Data: obj, checked: obj}, nil
		}
		return successResponse(id, ev.Data)
	case EventError:
		return ProblemResponse(id, ev.Problem()), nil
	}
	return Response{}, fmt.Errorf("event %q is not terminal", ev.Type)
}

// asObjectValid is asObject for data already known to be valid JSON.
func asObjectValid(data json.RawMessage) (json.RawMessage, error) {
	if !wire.IsObject(data) {
		return wrapResult(data), nil
	}
	err := wire.ScanRawMembers(data, func(name, _ []byte) error {
		if reserved(name) {
			return errReservedMember
		}
		return nil
	})
	if errors.Is(err, errReservedMember) {
		return wrapResult(data), nil
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// asObject returns data as a JSON object: itself when it is one that
// flattens without overwriting id or success, else wrapped whole as
// {"result": data}.
func asObject(data json.RawMessage) (json.RawMessage, error) {
	if len(data) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !wire.IsObject(data) {
		if !wire.Valid(data) {
			return nil, errors.New("data is not valid JSON in UTF-8")
		}
		return wrapResult(data), nil
	}
	members, err := objectMembers(data)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if reserved(m.name) {
			return wrapResult(data), nil
		}
	}
	return data, nil
}

// wrapResult carries a result that cannot be flattened as {"result": data}.
func wrapResult(data json.RawMessage) json.RawMessage {
	return append(append(json.RawMessage(`{"result":`), data...), '}')
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members in document order,
// rejecting duplicates so flattening can never hide a member.
func objectMembers(data []byte) ([]member, error) {
	if err := wire.Check(data); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	return scanObjectMembers(data)
}

// scanObjectMembers is objectMembers for data known to be valid JSON.
func scanObjectMembers(data []byte) ([]member, error) {
	var out []member
	var seen map[string]bool // only for larger objects; a scan is cheaper below that
	err := wire.ScanMembers(data, func(name string, v []byte) error {
		dup := false
		if seen != nil {
			dup = seen[name]
		} else {
			for _, m := range out {
				dup = dup || m.name == name
			}
			if len(out) == 16 {
				seen = make(map[string]bool, 32)
				for _, m := range out {
					seen[m.name] = true
				}
			}
		}
		if dup {
			return fmt.Errorf("duplicate member %q", name)
		}
		if seen != nil {
			seen[name] = true
		}
		out = append(out, member{name, v})
		return nil
	})
	return out, err
}

// Get returns the flattened member name of Data.
func (r Response) Get(name string) (json.RawMessage, bool) {
	members, err := r.members()
	if err != nil {
		return nil, false
	}
	for _, m := range members {
		if m.name == name {
			return m.value, true
		}
	}
	return nil, false
}

// MarshalJSON writes {"id":…,"success":…,<data members>}.
func (r Response) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32+len(r.ID)+len(r.Data))
	b = append(b, `{"id":`...)
	id, _ := json.Marshal(r.ID)
	b = append(b, id...)
	b = append(b, `,"success":`...)
	b = strconv.AppendBool(b, r.Success)
	if len(r.Data) > 0 {
		members, err := r.members()
		if err != nil {
			return nil, fmt.Errorf("response data: %w", err)
		}
		for _, m := range members {
			if reserved(m.name) {
				return nil, errReservedMember
			}
			b = append(b, ',')
			name, _ := json.Marshal(m.name)
			b = append(b, name...)
			b = append(b, ':')
			b = append(b, m.value...)
		}
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a flattened response: id (string) and success (bool)
// are required; every other member, in order, becomes Data.
func (r *Response) UnmarshalJSON(data []byte) error {
	members, err := objectMembers(data)
	if err != nil {
		return fmt.Errorf("response: %w", err)
	}
	var out Response
	var haveID, haveSuccess bool
	rest := []byte{'{'}
	for _, m := range members {
		switch m.name {
		case "id":
			if err := json.Unmarshal(m.value, &out.ID); err != nil {
				return fieldError("response", "id", errors.New("want a string"))
			}
			haveID = true
		case "success":
			if err := json.Unmarshal(m.value, &out.Success); err != nil {
				return fieldError("response", "success", errors.New("want a boolean"))
			}
			haveSuccess = true
		default:
			if len(rest) > 1 {
				rest = append(rest, ',')
			}
			name, _ := json.Marshal(m.name)
			rest = append(rest, name...)
			rest = append(rest, ':')
			rest = append(rest, m.value...)
		}
	}
	if !haveID {
		return errors.New("response: field id is required")
	}
	if !haveSuccess {
		return errors.New("response: field success is required")
	}
	if len(rest) > 1 {
		out.Data = append(rest, '}')
	}
	if !out.Success {
		if v, ok := out.Get("code"); !ok || !isJSONString(v) {
			return errors.New("response: field code is required (a string) when success is false")
		}
	}
	*r = out
	return nil
}

func isJSONString(b []byte) bool { return len(b) > 0 && b[0] == '"' }
