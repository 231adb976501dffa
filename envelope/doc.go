// Package envelope holds toolmesh's wire types and their codecs: the
// ToolEvent stream, the Call request body, the flattened Response, RFC 9457
// Problems with the one code registry, ResponseFormat, ToolSpec and the
// CliBindingConfig of command-line tools, plus JSON Schema validation of
// arguments and results.
//
// The package is pure: it knows nothing of NATS, so the same types serve the
// worker, the caller, the command and any other transport. Every decoder
// rejects malformed input with an error that names the offending field and
// never panics; the field names follow the seed documents byte for byte.
package envelope
