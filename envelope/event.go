package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// EventType tags a ToolEvent on the wire.
type EventType string

// The five event types of a tool call's stream.
const (
	EventStart    EventType = "start"
	EventProgress EventType = "progress"
	EventDelta    EventType = "delta"
	EventResult   EventType = "result"
	EventError    EventType = "error"
)

// ToolEvent is one event of a call's stream: start, progress, delta,
// result or error. Exactly one terminal event (result or error) ends every
// call. Only the fields of the event's Type are written; optional ones are
// omitted when empty.
type ToolEvent struct {
	Type EventType

	// start
	ToolID   string
	CallID   string
	Metadata map[string]any

	// progress: Pct is 0..100 when set.
	Pct *float64
	// progress message, or the error's human-readable message.
	Message string

	// delta and result payload, any JSON value.
	Data json.RawMessage

	// error
	Code    Code
	Details *Problem

	// validData records that Data came out of UnmarshalJSON, which
	// validated it, so building a Response need not scan it again.
	validData bool
}

// IsTerminal reports whether e ends its stream (a result or an error).
func (e ToolEvent) IsTerminal() bool { return e.Type == EventResult || e.Type == EventError }

// StartEvent opens a stream for tool and call, with optional metadata.
func StartEvent(toolID, callID string, metadata map[string]any) ToolEvent {
	return ToolEvent{Type: EventStart, ToolID: toolID, CallID: callID, Metadata: metadata}
}

// ProgressEvent reports coarse progress; pct is clamped to 0..100.
func ProgressEvent(pct float64, message string) ToolEvent {
	pct = min(max(pct, 0), 100)
	return ToolEvent{Type: EventProgress, Pct: &pct, Message: message}
}

// DeltaEvent carries partial output.
func DeltaEvent(data json.RawMessage) ToolEvent { return ToolEvent{Type: EventDelta, Data: data} }

// ResultEvent carries the terminal result.
func ResultEvent(data json.RawMessage) ToolEvent { return ToolEvent{Type: EventResult, Data: data} }

// ErrorEvent carries a terminal Problem: the event's code and message are the
// Problem's code and detail, its details the whole Problem.
func ErrorEvent(p *Problem) ToolEvent {
	return ToolEvent{Type: EventError, Code: p.Code, Message: p.Error(), Details: p}
}

// Problem returns the Problem of an error event: its details when present,
// otherwise one built from the code and message. Non-error events give nil.
func (e ToolEvent) Problem() *Problem {
	if e.Type != EventError {
		return nil
	}
	if e.Details != nil {
		return e.Details
	}
	p := NewProblem(e.Code, e.Message)
	if _, ok := Lookup(e.Code); !ok {
		p = NewProblem(CodeToolFailed, e.Message)
		p.Code = e.Code
	}
	return p
}

// MarshalJSON writes the event's tagged form, only the fields of its type.
func (e ToolEvent) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 64+len(e.Data)))
}

// AppendJSON appends the event's JSON to b; the worker's hot path uses it to
// encode without an intermediate buffer.
func (e ToolEvent) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, string(e.Type))
	var err error
	switch e.Type {
	case EventStart:
		b = appendString(b, "tool_id", e.ToolID)
		if e.CallID != "" {
			b = appendString(b, "call_id", e.CallID)
		}
		if len(e.Metadata) > 0 {
			if b, err = appendValue(b, "metadata", e.Metadata); err != nil {
				return nil, err
			}
		}
	case EventProgress:
		if e.Pct != nil {
			if *e.Pct < 0 || *e.Pct > 100 {
				return nil, fmt.Errorf("progress: pct %v outside 0..100", *e.Pct)
			}
			b = append(b, `,"pct":`...)
			b = strconv.AppendFloat(b, *e.Pct, 'f', -1, 64)
		}
		if e.Message != "" {
			b = appendString(b, "message", e.Message)
		}
	case EventDelta, EventResult:
		b = append(b, `,"data":`...)
		if len(e.Data) == 0 {
			b = append(b, "null"...)
		} else {
			if !json.Valid(e.Data) {
				return nil, fmt.Errorf("%s: data is not valid JSON", e.Type)
			}
			b = append(b, e.Data...)
		}
	case EventError:
		if e.Code == "" {
			return nil, errors.New("error event: code is required")
		}
		b = appendString(b, "code", string(e.Code))
		b = appendString(b, "message", e.Message)
		if e.Details != nil {
			if b, err = appendValue(b, "details", e.Details); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("event: unknown type %q", e.Type)
	}
	return append(b, '}'), nil
}

func appendString(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	enc, _ := json.Marshal(v) // HTML-safe escaping, unlike strconv.Quote's Go syntax
	return append(b, enc...)
}

func appendValue(b []byte, name string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", name, err)
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return append(b, enc...), nil
}

// UnmarshalJSON reads one event, rejecting a missing or unknown type, a
// progress pct outside 0..100, an error without code, and fields of the
// wrong JSON type, each with an error naming the field.
func (e *ToolEvent) UnmarshalJSON(data []byte) error {
	ev, err := parseEvent(data, true)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// ParseEvent decodes one event like UnmarshalJSON, but the event's Data
// aliases data instead of copying it: for callers that own the buffer, such
// as a NATS message handler (nats.go gives every message its own payload).
func ParseEvent(data []byte) (ToolEvent, error) { return parseEvent(data, false) }

// eventType maps the wire tag to its constant without allocating.
func eventType(raw []byte) (EventType, bool) {
	switch string(raw) {
	case `"start"`:
		return EventStart, true
	case `"progress"`:
		return EventProgress, true
	case `"delta"`:
		return EventDelta, true
	case `"result"`:
		return EventResult, true
	case `"error"`:
		return EventError, true
	}
	return "", false
}

func parseEvent(data []byte, copyData bool) (ToolEvent, error) {
	var none ToolEvent
	if err := validJSON(data); err != nil {
		return none, fmt.Errorf("event: %w", err)
	}
	var typ, toolID, callID, message, code, metadata, pct, payload, details []byte
	err := scanRawMembers(data, func(name, v []byte) error {
		switch string(name) {
		case "type":
			typ = v
		case "tool_id":
			toolID = v
		case "call_id":
			callID = v
		case "metadata":
			metadata = v
		case "pct":
			pct = v
		case "message":
			message = v
		case "data":
			payload = v
		case "code":
			code = v
		case "details":
			details = v
		}
		return nil
	})
	if err != nil {
		return none, fmt.Errorf("event: %w", err)
	}
	str := func(field string, raw []byte) (string, error) {
		if raw == nil || isNull(raw) {
			return "", nil
		}
		s, err := unquote(raw)
		if err != nil {
			return "", fieldError("event", field, err)
		}
		return s, nil
	}
	if typ == nil || isNull(typ) {
		return none, errors.New("event: field type is required")
	}
	et, known := eventType(typ)
	if !known {
		// The fast path only knows the plain spelling; an escaped tag
		// such as "st\u0061rt" is still the same string.
		t, err := str("type", typ)
		if err != nil {
			return none, err
		}
		if et, known = eventType(strconv.AppendQuote(nil, t)); !known {
			return none, fmt.Errorf("event: field type: unknown event type %q", t)
		}
	}
	ev := ToolEvent{Type: et}
	switch ev.Type {
	case EventStart:
		if ev.ToolID, err = str("tool_id", toolID); err != nil {
			return none, err
		}
		if ev.ToolID == "" {
			return none, errors.New("event start: field tool_id is required")
		}
		if ev.CallID, err = str("call_id", callID); err != nil {
			return none, err
		}
		if metadata != nil && !isNull(metadata) {
			if err := json.Unmarshal(metadata, &ev.Metadata); err != nil {
				return none, fieldError("event start", "metadata", errors.New("want a JSON object"))
			}
		}
	case EventProgress:
		if pct != nil && !isNull(pct) {
			p, err := strconv.ParseFloat(string(pct), 64)
			if err != nil || pct[0] == '"' {
				return none, fieldError("event progress", "pct", errors.New("want a number"))
			}
			if p < 0 || p > 100 {
				return none, fmt.Errorf("event progress: field pct: %v is outside 0..100", p)
			}
			ev.Pct = &p
		}
		if ev.Message, err = str("message", message); err != nil {
			return none, err
		}
	case EventDelta, EventResult:
		if payload == nil {
			return none, fmt.Errorf("event %s: field data is required", ev.Type)
		}
		ev.Data = json.RawMessage(payload)
		if copyData {
			ev.Data = append(json.RawMessage(nil), payload...)
		}
		ev.validData = true
	case EventError:
		c, err := str("code", code)
		if err != nil {
			return none, err
		}
		if c == "" {
			return none, errors.New("event error: field code is required")
		}
		ev.Code = Code(c)
		if ev.Message, err = str("message", message); err != nil {
			return none, err
		}
		if details != nil && !isNull(details) {
			var p Problem
			if err := json.Unmarshal(details, &p); err != nil {
				return none, fieldError("event error", "details", err)
			}
			ev.Details = &p
		}
	}
	return ev, nil
}
