package envelope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/toolmesh/toolmesh/internal/codes"
	"github.com/toolmesh/toolmesh/internal/wire"
)

// defaultBaseURI is the base of every problem type URI unless a worker's
// or caller's ProblemBaseURI names another: types read
// {base}/{slug}/{version}.
const defaultBaseURI = codes.DefaultBaseURI

// Applicability says how safely an agent may apply a suggested fix or code
// action without asking a human. Unspecified is the safe floor: a missing or
// unknown marker is never treated as auto-applicable.
type Applicability string

// The applicability markers, modelled on rustc's diagnostics.
const (
	Unspecified       Applicability = "unspecified"
	MachineApplicable Applicability = "machine_applicable"
	MaybeIncorrect    Applicability = "maybe_incorrect"
	HasPlaceholders   Applicability = "has_placeholders"
)

func (a Applicability) normalised() Applicability {
	switch a {
	case MachineApplicable, MaybeIncorrect, HasPlaceholders:
		return a
	}
	return Unspecified
}

// MarshalJSON writes the marker, unknown values as unspecified.
func (a Applicability) MarshalJSON() ([]byte, error) {
	return json.Marshal(string(a.normalised()))
}

// UnmarshalJSON reads a marker; anything unknown becomes unspecified, the safe default.
func (a *Applicability) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("applicability: want a string: %w", err)
	}
	*a = Applicability(s).normalised()
	return nil
}

// SuggestedFix is a recovery action an agent or a human can take.
type SuggestedFix struct {
	Description   string        `json:"description"`
	Applicability Applicability `json:"applicability"`
}

// CodeAction is a structured edit modelled on LSP's CodeAction: what to
// change, and how safe it is to change it unattended.
type CodeAction struct {
	Title         string        `json:"title"`
	Kind          string        `json:"kind,omitempty"`
	Applicability Applicability `json:"applicability"`
	// Edit optionally describes the change, e.g. {"pointer":"/path","value":…}.
	Edit map[string]any `json:"edit,omitempty"`
}

// Problem is an RFC 9457 problem detail with toolmesh's agent extensions:
// code (the registry code), retry_after (always present, null unless
// transient), suggested_fix, code_actions and exit_code. Extensions holds
// any further members, flattened to the top level on the wire.
//
// *Problem is an error, so handlers can return one and have it reach the
// caller unchanged.
type Problem struct {
	Type         string
	Title        string
	Status       int
	Detail       string
	Instance     string
	Code         Code
	RetryAfter   *float64
	SuggestedFix *SuggestedFix
	CodeActions  []CodeAction
	ExitCode     int
	Extensions   map[string]any
}

// NewProblem builds a Problem for a registered code with a fresh instance
// URN, the registry's title, status, exit code, default fix and (for
// transient codes) default retry_after, its type URI under
// https://toolmesh.dev/problems (a worker's or caller's ProblemBaseURI
// rebases it). An unregistered code yields an internal_error Problem whose
// detail names it, so nothing is ever emitted outside the registry.
func NewProblem(code Code, detail string) *Problem {
	info, ok := codes.Lookup(code)
	if !ok {
		detail = fmt.Sprintf("unregistered problem code %q: %s", code, detail)
		code = CodeInternal
		info, _ = codes.Lookup(code)
	}
	p := &Problem{
		Type:     info.DefaultType,
		Title:    info.Title,
		Status:   info.Status,
		Detail:   detail,
		Instance: newInstance(),
		Code:     code,
		ExitCode: info.ExitCode,
	}
	p.SuggestedFix = &SuggestedFix{Description: info.Fix, Applicability: Applicability(info.FixApplicability)}
	if info.Transient {
		ra := info.RetryAfter
		p.RetryAfter = &ra
	}
	return p
}

// Problemf is NewProblem with a formatted detail.
func Problemf(code Code, format string, args ...any) *Problem {
	return NewProblem(code, fmt.Sprintf(format, args...))
}

// newInstance returns a fresh urn:uuid (version 4) identifying one occurrence.
func newInstance() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const prefix = "urn:uuid:"
	out := make([]byte, len(prefix)+36)
	copy(out, prefix)
	h := out[len(prefix):]
	for i, j := 0, 0; i < 16; i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			h[j] = '-'
			j++
		}
		hex.Encode(h[j:j+2], b[i:i+1])
		j += 2
	}
	return string(out)
}

// Error returns the detail, so the human line and the machine detail are the same text.
func (p *Problem) Error() string {
	if p.Detail != "" {
		return p.Detail
	}
	return p.Title
}

// Is makes a timeout Problem match context.DeadlineExceeded and a
// cancelled one context.Canceled, so errors.Is answers the same question
// for a Problem that crossed the wire as for the local context error.
func (p *Problem) Is(target error) bool {
	switch p.Code {
	case CodeTimeout:
		return target == context.DeadlineExceeded
	case CodeCancelled:
		return target == context.Canceled
	}
	return false
}

// Transient reports whether retrying may succeed (retry_after is set).
func (p *Problem) Transient() bool { return p.RetryAfter != nil }

// RetryAfterDuration returns retry_after as a time.Duration, and whether
// the Problem has one (it is transient). The wire keeps seconds.
func (p *Problem) RetryAfterDuration() (time.Duration, bool) {
	if p.RetryAfter == nil {
		return 0, false
	}
	return time.Duration(*p.RetryAfter * float64(time.Second)), true
}

// WithRetryAfter sets retry_after in seconds and returns p.
func (p *Problem) WithRetryAfter(seconds float64) *Problem {
	p.RetryAfter = &seconds
	return p
}

// WithFix replaces the suggested fix and returns p.
func (p *Problem) WithFix(description string, a Applicability) *Problem {
	p.SuggestedFix = &SuggestedFix{Description: description, Applicability: a.normalised()}
	return p
}

// WithExtension sets one extension member and returns p. Names of standard
// members are refused silently by MarshalJSON never overwriting them.
func (p *Problem) WithExtension(name string, value any) *Problem {
	if p.Extensions == nil {
		p.Extensions = map[string]any{}
	}
	p.Extensions[name] = value
	return p
}

// AsProblem returns err as a Problem: the Problem itself when err wraps one,
// a cancelled or timeout Problem for context errors, and otherwise fallback
// with err's text as detail. A nil err gives nil.
func AsProblem(err error, fallback Code) *Problem {
	if err == nil {
		return nil
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	switch {
	case errors.Is(err, context.Canceled):
		return NewProblem(CodeCancelled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return NewProblem(CodeTimeout, err.Error())
	}
	return NewProblem(fallback, err.Error())
}

var standardMembers = map[string]bool{
	"type": true, "title": true, "status": true, "detail": true, "instance": true, "code": true,
	"retry_after": true, "suggested_fix": true, "code_actions": true, "exit_code": true,
}

// MarshalJSON writes the compact application/problem+json form: standard
// members first in a fixed order, retry_after always (null when not
// transient), then extensions sorted by name.
func (p *Problem) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 512))
}

// appendJSON appends the problem document to b, members in the order
// MarshalJSON documents, without reflection for the standard members:
// every failed call encodes one on the worker and one in its Response.
// It is written out because a struct encoder cannot put the extensions
// beside the standard members at the top level; BenchmarkProblemJSON
// measures it at about 8x the encoding/json form it replaced, and segmentio
// encoding the standard members alone (no extensions) at about 1.25x it,
// too little on the failure path to split the document in two.
func (p *Problem) appendJSON(b []byte) ([]byte, error) {
	typ := p.Type
	if typ == "" {
		typ = "about:blank"
	}
	b = append(b, `{"type":`...)
	b = wire.AppendString(b, typ)
	b = wire.AppendString(append(b, `,"title":`...), p.Title)
	b = strconv.AppendInt(append(b, `,"status":`...), int64(p.Status), 10)
	b = wire.AppendString(append(b, `,"detail":`...), p.Detail)
	b = wire.AppendString(append(b, `,"instance":`...), p.Instance)
	b = wire.AppendString(append(b, `,"code":`...), string(p.Code))
	b = append(b, `,"retry_after":`...)
	if p.RetryAfter == nil {
		b = append(b, "null"...)
	} else {
		var ok bool
		if b, ok = wire.AppendFloat(b, *p.RetryAfter); !ok {
			return nil, fmt.Errorf("problem retry_after: unsupported value %v", *p.RetryAfter)
		}
	}
	b = append(b, `,"suggested_fix":`...)
	if p.SuggestedFix == nil {
		b = append(b, "null"...)
	} else {
		b = wire.AppendString(append(b, `{"description":`...), p.SuggestedFix.Description)
		b = append(wire.AppendString(append(b, `,"applicability":`...), string(p.SuggestedFix.Applicability.normalised())), '}')
	}
	b = append(b, `,"code_actions":`...)
	if len(p.CodeActions) == 0 {
		b = append(b, "[]"...)
	} else {
		enc, err := json.Marshal(p.CodeActions)
		if err != nil {
			return nil, fmt.Errorf("problem code_actions: %w", err)
		}
		b = append(b, enc...)
	}
	b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(p.ExitCode), 10)
	return p.appendExtensions(b)
}

// appendExtensions appends the extension members, sorted by name, and
// closes the document.
func (p *Problem) appendExtensions(b []byte) ([]byte, error) {
	if len(p.Extensions) == 0 {
		return append(b, '}'), nil
	}
	names := make([]string, 0, len(p.Extensions))
	for k := range p.Extensions {
		if !standardMembers[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		enc, err := json.Marshal(p.Extensions[k])
		if err != nil {
			return nil, fmt.Errorf("problem %s: %w", jsonString(k), err)
		}
		b = append(wire.AppendString(append(b, ','), k), ':')
		b = append(b, enc...)
	}
	return append(b, '}'), nil
}

// jsonString escapes a member name for splicing between quotes.
func jsonString(s string) string {
	enc, _ := json.Marshal(s)
	return string(enc[1 : len(enc)-1])
}

// UnmarshalJSON reads a problem document. Standard members must have their
// RFC 9457 types; retry_after must be null or a non-negative number; other
// members land in Extensions.
func (p *Problem) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("problem: want a JSON object: %w", err)
	}
	if raw == nil {
		return errors.New("problem: want a JSON object, got null")
	}
	var q Problem
	fields := []struct {
		name string
		dst  any
	}{
		{"type", &q.Type}, {"title", &q.Title}, {"status", &q.Status}, {"detail", &q.Detail},
		{"instance", &q.Instance}, {"code", &q.Code}, {"retry_after", &q.RetryAfter},
		{"suggested_fix", &q.SuggestedFix}, {"code_actions", &q.CodeActions}, {"exit_code", &q.ExitCode},
	}
	for _, f := range fields {
		v, ok := raw[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return fieldError("problem", f.name, err)
		}
		delete(raw, f.name)
	}
	if q.RetryAfter != nil && *q.RetryAfter < 0 {
		return fmt.Errorf("problem: field retry_after: must be null or >= 0, got %v", *q.RetryAfter)
	}
	for k, v := range raw {
		var val any
		if err := json.Unmarshal(v, &val); err != nil {
			return fieldError("problem", k, err)
		}
		if q.Extensions == nil {
			q.Extensions = map[string]any{}
		}
		q.Extensions[k] = val
	}
	*p = q
	return nil
}

// fieldError names the object and field a decoding error belongs to.
func fieldError(object, field string, err error) error {
	return fmt.Errorf("%s: field %s: %w", object, field, err)
}

// Ran says whether a failed call's handler ran: the Problem member "ran",
// which an agent reads before retrying something that is not idempotent.
type Ran string

// The values of a Problem's "ran" member.
const (
	// RanNo: the handler did not run and never will for this call; a
	// retry cannot do the work twice.
	RanNo Ran = "no"
	// RanMaybe: the handler may have run (a worker took the call up and
	// then went silent or away, or the connection dropped).
	RanMaybe Ran = "maybe"
	// RanYes: the handler ran (it failed, was cancelled or timed out while
	// running, or its result was refused).
	RanYes Ran = "yes"
)

// extRan is the name of the Problem member that carries Ran.
const extRan = "ran"

// WithRan returns a copy of p that says whether the call's handler ran
// (p itself is left alone: handlers may return shared Problems). A Problem
// that already says so is returned as it is: the side closest to the
// handler knows best.
func (p *Problem) WithRan(r Ran) *Problem {
	if p == nil || p.Ran() != "" {
		return p
	}
	q := *p
	q.Extensions = make(map[string]any, len(p.Extensions)+1)
	for k, v := range p.Extensions {
		q.Extensions[k] = v
	}
	q.Extensions[extRan] = string(r)
	return &q
}

// Ran returns the Problem's "ran" member, or "" when it says nothing.
func (p *Problem) Ran() Ran {
	if p == nil {
		return ""
	}
	s, _ := p.Extensions[extRan].(string)
	return Ran(s)
}
