package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/wire"
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
	Code Code
	// details is the error's Problem when the event's details member is a
	// toolmesh Problem (one that re-encodes to the same JSON members).
	details *Problem
	// detailsRaw holds a details member that is not a toolmesh Problem —
	// another implementation's free-form detail — verbatim, so it passes
	// through the mesh unchanged. It is written only when details is nil.
	detailsRaw json.RawMessage

	// callIDNumber records that the call id arrived as a JSON number (the
	// shared ToolEvent format declares it an unsigned 64-bit integer), so it is written back as one.
	callIDNumber bool
	// Question holds a question or answered event's members (§23).
	Question *Question
	// Log is a progress event's log message (LogEvent).
	Log *LogMessage

	// extra holds members the typed fields cannot carry (unknown names,
	// nulls, members of another event type, a metadata that is not an
	// object), verbatim, so decoding then encoding loses nothing.
	extra []rawMember

	// validData records that Data came out of UnmarshalJSON or
	// ParseEvent, which validated it, so building a Response need not
	// scan it again.
	validData bool
}

// IsTerminal reports whether e ends its stream (a result or an error).
func (e ToolEvent) IsTerminal() bool { return e.Type == EventResult || e.Type == EventError }

// ProgressEvent reports coarse progress; pct is clamped to 0..100.
func ProgressEvent(pct float64, message string) ToolEvent {
	pct = min(max(pct, 0), 100)
	return ToolEvent{Type: EventProgress, Pct: &pct, Message: message}
}

// Percent returns a progress event's pct (0..100) and whether it has one.
func (e ToolEvent) Percent() (float64, bool) {
	if e.Pct == nil {
		return 0, false
	}
	return *e.Pct, true
}

// ErrorEvent carries a terminal Problem: the event's code and message are the
// Problem's code and detail, its details the whole Problem.
func ErrorEvent(p *Problem) ToolEvent {
	return ToolEvent{Type: EventError, Code: p.Code, Message: p.Error(), details: p}
}

// Problem returns the Problem of an error event: its details when present,
// otherwise one built from the code and message. Non-error events give nil.
func (e ToolEvent) Problem() *Problem {
	if e.Type != EventError {
		return nil
	}
	if e.details != nil {
		return e.details
	}
	p := NewProblem(e.Code, e.Message)
	if _, ok := codes.Lookup(e.Code); !ok {
		p = NewProblem(CodeToolFailed, e.Message)
		p.Code = e.Code
	}
	if len(e.detailsRaw) > 0 {
		p.WithExtension("details", e.detailsRaw)
	}
	return p
}

// MarshalJSON writes the event's tagged form, only the fields of its type.
func (e ToolEvent) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 64+len(e.Data)))
}

// AppendJSON appends the event's JSON (MarshalJSON's bytes) to b and
// returns the extended buffer, as strconv.AppendQuote does: a relay or a
// loop that sends many events reuses one buffer instead of allocating one
// per event (for a 1 MiB event, a fifth of MarshalJSON's time).
func (e ToolEvent) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"type":`...)
	b = strconv.AppendQuote(b, string(e.Type))
	var err error
	switch e.Type {
	case EventStart:
		b, err = e.appendStart(b)
	case EventProgress:
		b, err = e.appendProgress(b)
	case EventDelta, EventResult:
		b, err = e.appendData(b)
	case EventError:
		b, err = e.appendError(b)
	case EventQuestion, EventAnswered:
		b, err = e.appendQuestion(b)
	default:
		err = fmt.Errorf("event: unknown type %q", e.Type)
	}
	if err != nil {
		return nil, err
	}
	return append(e.appendExtra(b), '}'), nil
}

// appendStart writes a start event's members.
func (e ToolEvent) appendStart(b []byte) ([]byte, error) {
	b = appendString(b, "tool_id", e.ToolID)
	if e.CallID != "" {
		b = e.appendCallID(b)
	}
	if e.Metadata != nil {
		return appendValue(b, "metadata", e.Metadata)
	}
	return b, nil
}

// appendProgress writes a progress event's members.
func (e ToolEvent) appendProgress(b []byte) ([]byte, error) {
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
	if e.Log != nil {
		return e.appendLog(b)
	}
	return b, nil
}

// appendData writes a delta's or a result's data, checked unless it is
// known valid.
func (e ToolEvent) appendData(b []byte) ([]byte, error) {
	b = append(b, `,"data":`...)
	if len(e.Data) == 0 {
		return append(b, "null"...), nil
	}
	if !e.validData && !wire.Valid(e.Data) {
		return nil, fmt.Errorf("%s: data is not valid JSON in UTF-8", e.Type)
	}
	return append(b, e.Data...), nil
}

// appendError writes an error event's code, message and details.
func (e ToolEvent) appendError(b []byte) ([]byte, error) {
	if e.Code == "" {
		return nil, errors.New("error event: code is required")
	}
	b = appendString(b, "code", string(e.Code))
	b = appendString(b, "message", e.Message)
	switch {
	case e.details != nil:
		out, err := e.details.appendJSON(append(b, `,"details":`...))
		if err != nil {
			return nil, fmt.Errorf("event details: %w", err)
		}
		return out, nil
	case len(e.detailsRaw) > 0:
		if !wire.Valid(e.detailsRaw) {
			return nil, errors.New("error event: details is not valid JSON")
		}
		return append(append(b, `,"details":`...), e.detailsRaw...), nil
	}
	return b, nil
}

// appendCallID writes the call id, as a number when it arrived as one.
func (e ToolEvent) appendCallID(b []byte) []byte {
	if e.callIDNumber {
		if _, err := strconv.ParseUint(e.CallID, 10, 64); err == nil {
			return append(append(b, `,"call_id":`...), e.CallID...)
		}
	}
	return appendString(b, "call_id", e.CallID)
}

// appendExtra writes the members kept verbatim by the decoder, skipping any
// whose name a typed field has since taken over.
func (e ToolEvent) appendExtra(b []byte) []byte {
	for _, m := range e.extra {
		if e.writes(m.name) {
			continue
		}
		b = append(b, ',')
		name, _ := json.Marshal(m.name)
		b = append(append(append(b, name...), ':'), m.value...)
	}
	return b
}

// writes reports whether the typed fields of e put member name on the wire.
func (e ToolEvent) writes(name string) bool {
	if e.Type == EventQuestion || e.Type == EventAnswered {
		return name == "type" || e.questionWrites(name)
	}
	switch name {
	case "type":
		return true
	case "tool_id":
		return e.Type == EventStart
	case "call_id":
		return e.Type == EventStart && e.CallID != ""
	case "metadata":
		return e.Type == EventStart && e.Metadata != nil
	case "pct":
		return e.Type == EventProgress && e.Pct != nil
	case "log":
		return e.Type == EventProgress && e.Log != nil
	case "message":
		return e.Type == EventError || (e.Type == EventProgress && e.Message != "")
	case "data":
		return e.Type == EventDelta || e.Type == EventResult
	case "code":
		return e.Type == EventError
	case "details":
		return e.Type == EventError && (e.details != nil || len(e.detailsRaw) > 0)
	}
	return false
}

// rawMember is one object member kept verbatim.
type rawMember struct {
	name  string
	value json.RawMessage
}

func appendString(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return wire.AppendString(b, v) // HTML-safe escaping, unlike strconv.Quote's Go syntax
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
// aliases data instead of copying it: for readers that own the buffer and
// do not reuse it, such as a NATS message handler (nats.go gives every
// message its own payload). For a 1 MiB result it takes a tenth of
// UnmarshalJSON's time, which must copy (encoding/json's rule).
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
	case `"question"`:
		return EventQuestion, true
	case `"answered"`:
		return EventAnswered, true
	}
	return "", false
}

// eventMembers are the raw members of one event object as scanned.
type eventMembers struct {
	typ, toolID, callID, message, code, metadata, pct, payload, details []byte
	unknown                                                             []rawMember
}

func (m *eventMembers) take(name, v []byte) error {
	switch string(name) {
	case "type":
		m.typ = v
	case "tool_id":
		m.toolID = v
	case "call_id":
		m.callID = v
	case "metadata":
		m.metadata = v
	case "pct":
		m.pct = v
	case "message":
		m.message = v
	case "data":
		m.payload = v
	case "code":
		m.code = v
	case "details":
		m.details = v
	default:
		m.unknown = append(m.unknown, rawMember{string(name), append(json.RawMessage(nil), v...)})
	}
	return nil
}

// leftovers returns the known members e's type did not take, for e.extra.
func (m *eventMembers) leftovers(e *ToolEvent) []rawMember {
	out := m.unknown
	for _, k := range []struct {
		name string
		v    []byte
	}{{"tool_id", m.toolID}, {"call_id", m.callID}, {"metadata", m.metadata}, {"pct", m.pct},
		{"message", m.message}, {"data", m.payload}, {"code", m.code}, {"details", m.details}} {
		if k.v != nil && !e.writes(k.name) {
			out = append(out, rawMember{k.name, append(json.RawMessage(nil), k.v...)})
		}
	}
	return out
}

// optString decodes an optional string member: absent and null give "".
func optString(object, field string, raw []byte) (string, error) {
	if raw == nil || wire.IsNull(raw) {
		return "", nil
	}
	s, err := wire.Unquote(raw)
	if err != nil {
		return "", fieldError(object, field, err)
	}
	return s, nil
}

func parseEvent(data []byte, copyData bool) (ToolEvent, error) {
	if ev, ok := parseDelta(data, copyData); ok {
		return ev, nil
	}
	return parseAnyEvent(data, copyData)
}

// parseAnyEvent decodes an event of any type and form.
func parseAnyEvent(data []byte, copyData bool) (ToolEvent, error) {
	var none ToolEvent
	if err := wire.Check(data); err != nil {
		return none, fmt.Errorf("event: %w", err)
	}
	var m eventMembers
	if err := wire.ScanRawMembers(data, m.take); err != nil {
		return none, fmt.Errorf("event: %w", err)
	}
	et, err := parseEventType(m.typ)
	if err != nil {
		return none, err
	}
	ev := ToolEvent{Type: et}
	switch ev.Type {
	case EventStart:
		// On an event of its own: parseStart's receiver escapes (to the
		// metadata decoder), and ev would escape with it on every path.
		start := &ToolEvent{Type: et}
		err = start.parseStart(&m)
		ev = *start
	case EventProgress:
		err = ev.parseProgress(&m)
	case EventDelta, EventResult:
		if m.payload == nil {
			return none, fmt.Errorf("event %s: field data is required", ev.Type)
		}
		ev.Data = json.RawMessage(m.payload)
		if copyData {
			ev.Data = append(json.RawMessage(nil), m.payload...)
		}
		ev.validData = true
	case EventError:
		err = ev.parseError(&m)
	case EventQuestion, EventAnswered:
		err = ev.parseQuestion(&m)
	}
	if err != nil {
		return none, err
	}
	ev.extra = m.leftovers(&ev)
	return ev, nil
}

// deltaPrefix is how a delta written by ToolEvent.AppendJSON begins.
const deltaPrefix = `{"type":"delta","data":`

// parseDelta decodes, in one validating pass over its data, a delta in
// exactly the form AppendJSON writes (the bulk of a stream); ok is false
// for anything else, which parseEvent's general path then decides. Its
// event is the one the general path would return.
func parseDelta(data []byte, copyData bool) (ev ToolEvent, ok bool) {
	n := len(data)
	if n < len(deltaPrefix)+2 || data[n-1] != '}' || string(data[:len(deltaPrefix)]) != deltaPrefix {
		return ev, false
	}
	v := data[len(deltaPrefix) : n-1]
	if isJSONSpace(v[0]) || isJSONSpace(v[len(v)-1]) || !wire.Valid(v) {
		return ev, false
	}
	if copyData {
		v = append([]byte(nil), v...)
	}
	return ToolEvent{Type: EventDelta, Data: json.RawMessage(v), validData: true}, true
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func parseEventType(typ []byte) (EventType, error) {
	if typ == nil || wire.IsNull(typ) {
		return "", errors.New("event: field type is required")
	}
	if et, known := eventType(typ); known {
		return et, nil
	}
	// The fast path only knows the plain spelling; an escaped tag
	// such as "st\u0061rt" is still the same string.
	t, err := optString("event", "type", typ)
	if err != nil {
		return "", err
	}
	if et, known := eventType(strconv.AppendQuote(nil, t)); known {
		return et, nil
	}
	return "", fmt.Errorf("event: field type: unknown event type %q", t)
}

func (ev *ToolEvent) parseStart(m *eventMembers) error {
	var err error
	if ev.ToolID, err = optString("event start", "tool_id", m.toolID); err != nil {
		return err
	}
	if ev.ToolID == "" {
		return errors.New("event start: field tool_id is required")
	}
	if len(m.callID) > 0 && m.callID[0] != '"' && !wire.IsNull(m.callID) {
		// Other implementations send call_id as an unsigned 64-bit
		// integer: keep its digits and its form.
		if _, err := strconv.ParseUint(string(m.callID), 10, 64); err != nil {
			return fieldError("event start", "call_id", errors.New("want a string or an unsigned 64-bit integer"))
		}
		ev.CallID, ev.callIDNumber = string(m.callID), true
	} else if ev.CallID, err = optString("event start", "call_id", m.callID); err != nil {
		return err
	}
	if len(m.metadata) > 0 && m.metadata[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(m.metadata))
		dec.UseNumber() // numbers keep their digits through a round trip
		if err := dec.Decode(&ev.Metadata); err != nil {
			return fieldError("event start", "metadata", err)
		}
	}
	return nil
}

func (ev *ToolEvent) parseProgress(m *eventMembers) error {
	if m.pct != nil && !wire.IsNull(m.pct) {
		p, err := strconv.ParseFloat(string(m.pct), 64)
		if err != nil || m.pct[0] == '"' {
			return fieldError("event progress", "pct", errors.New("want a number"))
		}
		if p < 0 || p > 100 {
			return fmt.Errorf("event progress: field pct: %v is outside 0..100", p)
		}
		ev.Pct = &p
	}
	var err error
	if ev.Message, err = optString("event progress", "message", m.message); err != nil {
		return err
	}
	return ev.parseLog(m)
}

func (ev *ToolEvent) parseError(m *eventMembers) error {
	c, err := optString("event error", "code", m.code)
	if err != nil {
		return err
	}
	if c == "" {
		return errors.New("event error: field code is required")
	}
	ev.Code = Code(c)
	if m.message != nil && !wire.IsNull(m.message) {
		if ev.Message, err = optString("event error", "message", m.message); err != nil {
			return err
		}
	}
	if m.details != nil && !wire.IsNull(m.details) {
		if p, ok := losslessProblem(m.details); ok {
			ev.details = p
		} else {
			ev.detailsRaw = append(json.RawMessage(nil), m.details...)
		}
	}
	return nil
}

// losslessProblem decodes raw as a Problem only when the Problem encodes
// back to the same JSON members; anything else is some other
// implementation's details and must pass through verbatim.
func losslessProblem(raw []byte) (*Problem, bool) {
	var p Problem
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &p) != nil {
		return nil, false
	}
	enc, err := json.Marshal(&p)
	if err != nil {
		return nil, false
	}
	return &p, wire.Same(raw, enc)
}
