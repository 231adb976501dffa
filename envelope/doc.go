// Package envelope holds the types a toolmesh tool and its callers
// exchange: the ToolSpec that describes a tool, the ToolEvent stream of a
// call, the flattened Response of a unary call, and the RFC 9457 Problem
// that every failure is, built from the one code registry (Codes, Lookup,
// docs/problems). Package worker and package caller re-export the names a
// tool author or a caller meets, so most programs import only one of
// those; envelope is for code that handles the types themselves.
//
// A worked example — a spec, its arguments checked, a transient failure
// reported and read back by the caller:
//
//	spec := envelope.ToolSpec{
//		Name:        "files.read",
//		Description: "Read a text file",
//		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
//	}
//	input, _, err := spec.Compile()
//	if err != nil {
//		return err // the spec itself is invalid
//	}
//	if v := input.Validate(json.RawMessage(`{"path":3}`)); len(v) > 0 {
//		return envelope.ValidationProblem(envelope.CodeInvalidInput, "args", v) // invalid_input at /path
//	}
//
//	p := envelope.NewProblem(envelope.CodeOverloaded, "the worker is busy").WithRetryAfter(2)
//	wire, _ := json.Marshal(envelope.ProblemResponse("call-1", p))
//	var got envelope.Response
//	_ = json.Unmarshal(wire, &got)   // got.Success == false, got.Get("code") is `"overloaded"`
//	wait, ok := p.RetryAfterDuration() // 2s, true: worth a retry
//
// A successful result object is flattened beside id and success; a result
// that is not an object, or has its own id or success member, is carried
// whole as {"result": …} (docs/protocol.md §5.6). A Problem is an error:
// errors.Is matches a timeout to context.DeadlineExceeded and a
// cancellation to context.Canceled, and AsProblem recovers it from any
// wrapped error.
//
// The package is pure: it knows nothing of NATS. Every decoder rejects
// malformed input with an error that names the offending field and never
// panics. The field names are those of the shared wire formats (the
// ToolEvent, ToolResult and CLI-binding formats other implementations of
// the protocol speak), byte for byte; README's "Wire shapes" section lists
// them. The call body, subjects, frames and other codecs only the worker
// and the caller use are internal to this module (internal/wire), and the
// lowering of specs to model providers' tool formats is package
// envelope/provider. The encoders here write with internal/wire's JSON
// appenders and scanner, the module's one home of the wire encoding; wire
// imports no public package, so a worker's call path, from the NATS
// message to the handler and back, uses three packages: worker, envelope
// and internal/wire.
package envelope
