package cli

import (
	"bytes"
	"encoding/json"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/codes"
)

// exitResult turns a non-zero exit into the call's outcome through
// exit_code_map: ok_empty is a success; a registry code is that code's own
// Problem (type, title, status, exit code); any other domain code travels
// as the error's code under the tool_failed type with domain_code kept; an
// unmapped exit is tool_failed. Every Problem keeps the program's exit code
// (program_exit_code) and its stderr tail.
func (h *toolHandler) exitResult(code int, waitErr error, o output, stderr *tailBuffer) (any, error) {
	mapped, ok := h.binding.ExitCodeMap[code]
	if ok && mapped == argtemplate.ExitOKEmpty {
		return h.emptyOKResult(o, stderr)
	}
	var p *envelope.Problem
	switch {
	case ok && isRegistryCode(mapped):
		p = envelope.Problemf(envelope.Code(mapped), "tool %s exited with code %d (%s)", h.spec.Name, code, mapped)
	case ok:
		p = envelope.Problemf(envelope.CodeToolFailed, "tool %s exited with code %d (%s)", h.spec.Name, code, mapped)
		p.Code = envelope.Code(mapped)
		p.WithExtension("domain_code", mapped)
	case code < 0:
		p = envelope.Problemf(envelope.CodeToolFailed, "tool %s was killed: %v", h.spec.Name, waitErr)
	default:
		p = envelope.Problemf(envelope.CodeToolFailed, "tool %s exited with code %d", h.spec.Name, code)
	}
	p.WithExtension("program_exit_code", code)
	p.WithExtension("stderr_tail", stderr.String())
	if stderr.lost {
		p.WithExtension("stderr_truncated", true)
	}
	return nil, p
}

func isRegistryCode(c string) bool {
	_, ok := codes.Lookup(envelope.Code(c))
	return ok
}

// emptyOKResult is the result of an exit mapped to ok_empty: what the
// program printed, read as for exit 0, and for json an empty stdout is
// null instead of a failure.
func (h *toolHandler) emptyOKResult(o output, stderr *tailBuffer) (any, error) {
	if outputFormat(h.binding) == outputJSON && len(bytes.TrimSpace(o.raw)) == 0 {
		return json.RawMessage("null"), nil
	}
	return h.finalResult(o, stderr)
}

// outputFormat is b's output format, json when unset.
func outputFormat(b *cliBinding) cliOutputFormat {
	if b.OutputFormat == "" {
		return outputJSON
	}
	return b.OutputFormat
}
