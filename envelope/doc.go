// Package envelope holds toolmesh's wire types and their codecs: the
// ToolEvent stream, the Call request body, the flattened Response, RFC 9457
// Problems with the one code registry, ResponseFormat, ToolSpec and the
// CliBindingConfig of command-line tools, plus JSON Schema validation of
// arguments and results.
//
// The package is pure: it knows nothing of NATS, so the same types serve the
// worker, the caller, the command and any other transport. Every decoder
// rejects malformed input with an error that names the offending field and
// never panics. The field names are those of the shared wire formats (the
// ToolEvent, ToolResult and CLI-binding formats other implementations of
// the protocol speak), byte for byte, so their messages decode here and
// ours decode there; README's "Wire shapes" section lists them.
package envelope
