// Package envelope holds the types a toolmesh tool and its callers
// exchange: the ToolSpec that describes a tool, the ToolEvent stream of a
// call, the flattened Response of a unary call, and the RFC 9457 Problem
// that every failure is, with a Code from the one registry (the Code
// constants here; docs/problems has a page for each). Package worker and
// package caller take and return these types as they are, so a tool author
// or a caller imports envelope beside one of them.
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
// ToolEvent and ToolResult formats other implementations of the protocol
// speak), byte for byte; docs/protocol.md specifies them. A spec has no
// binding: a CLI tool's binding stays with the tools file that declares
// it (package worker/cli), so no spec a worker announces can carry one.
// The call body, subjects, frames and other codecs only the worker
// and the caller use are internal to this module (internal/wire), and the
// lowering of specs to model providers' tool formats is package
// envelope/provider. The encoders here write with internal/wire's JSON
// appenders and scanner, the module's one home of the wire encoding; wire
// imports no public package, so a worker's call path, from the NATS
// message to the handler and back, uses three packages: worker, envelope
// and internal/wire.
package envelope
