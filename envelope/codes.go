package envelope

import "sort"

// Code is a machine-readable error code: the snake_case name an agent
// switches on. Every code the mesh itself emits is in the registry (see
// Lookup); tools may report their own domain codes (for example through a
// CLI binding's exit_code_map), which travel as the error event's code.
type Code string

// The codes of the registry. There are no synonyms: each failure the mesh can
// report has exactly one of these.
const (
	CodeInvalidInput          Code = "invalid_input"
	CodeToolNotFound          Code = "tool_not_found"
	CodeTimeout               Code = "timeout"
	CodeCancelled             Code = "cancelled"
	CodeWorkerLost            Code = "worker_lost"
	CodeOverloaded            Code = "overloaded"
	CodeHandlerError          Code = "handler_error"
	CodeMissingTerminal       Code = "missing_terminal"
	CodeStreamGap             Code = "stream_gap"
	CodeOutputInvalid         Code = "output_invalid"
	CodeDryRunUnsupported     Code = "dry_run_unsupported"
	CodePaginationUnsupported Code = "pagination_unsupported"
	CodeToolFailed            Code = "tool_failed"
	CodePayloadTooLarge       Code = "payload_too_large"
	CodeUnauthorized          Code = "unauthorized"
	CodeForbidden             Code = "forbidden"
	CodeConnectionLost        Code = "connection_lost"
	CodeInvalidConfig         Code = "invalid_config"
	CodeInternal              Code = "internal_error"
	CodeTaskNotFound          Code = "task_not_found"
	CodeTaskExpired           Code = "task_expired"
	CodeInputRequired         Code = "input_required"
	CodeInputTimeout          Code = "input_timeout"
	CodeDeclined              Code = "declined"
	// CodeTaskQuotaExceeded: a submit would take the owner past its task
	// storage quota, or the task store is full.
	CodeTaskQuotaExceeded Code = "task_quota_exceeded"
	// CodeToolConflict: workers give different specs for one tool name.
	CodeToolConflict Code = "tool_conflict"
	// The sandbox codes: a confined program was refused by its sandbox.
	CodeSandboxReadDenied    Code = "sandbox_read_denied"
	CodeSandboxWriteDenied   Code = "sandbox_write_denied"
	CodeSandboxExecDenied    Code = "sandbox_exec_denied"
	CodeSandboxConnectDenied Code = "sandbox_connect_denied"
	CodeSandboxLimit         Code = "sandbox_limit_exceeded"
)

// CodeInfo is one registry entry: everything needed to build a Problem for
// the code and to act on it.
type CodeInfo struct {
	Code Code
	// defaultType is the type URI under defaultBaseURI, made once.
	defaultType string
	// Slug is the path segment of the problem type URI, {base}/{slug}/{version}.
	Slug string
	// Version is the type URI's version segment; the meaning of a given
	// slug+version never changes.
	Version string
	Title   string
	// Status is the HTTP-style status class of the problem.
	Status int
	// ExitCode is what the toolmesh command exits with for this problem;
	// distinct per code so scripts can branch on it.
	ExitCode int
	// Transient problems may succeed when retried; they carry a retry_after.
	Transient bool
	// RetryAfter is the default delay, in seconds, suggested for a transient code.
	RetryAfter float64
	// Fix is the default suggested fix shown to humans and agents.
	Fix SuggestedFix
}

// registry is the one code registry, each entry complete with its code,
// slug and version (filled in once by withSlugs: every Problem reads them).
var registry = withSlugs(map[Code]CodeInfo{
	CodeInvalidInput: {Title: "Invalid input", Status: 400, ExitCode: 2,
		Fix: fix("Correct the arguments so they satisfy the tool's input schema (`toolmesh tools describe TOOL` shows it), then retry.", HasPlaceholders)},
	CodeToolNotFound: {Title: "Tool not found", Status: 404, ExitCode: 3,
		Fix: fix("Check the tool name with `toolmesh tools list`, or start a worker that hosts it.", MaybeIncorrect)},
	CodeDryRunUnsupported: {Title: "Dry run unsupported", Status: 422, ExitCode: 4,
		Fix: fix("Call the tool without dry_run, or add a dry_run_flag to its binding.", MaybeIncorrect)},
	CodePaginationUnsupported: {Title: "Pagination unsupported", Status: 422, ExitCode: 5,
		Fix: fix("Call the tool without paging, or add a page_all_flag to its binding.", MaybeIncorrect)},
	CodePayloadTooLarge: {Title: "Payload too large", Status: 413, ExitCode: 6,
		Fix: fix("Send smaller arguments, or raise the server's max_payload.", MaybeIncorrect)},
	CodeUnauthorized: {Title: "Unauthorized", Status: 401, ExitCode: 7,
		Fix: fix("Provide valid credentials (bearer token or NATS credentials) and retry.", HasPlaceholders)},
	CodeForbidden: {Title: "Forbidden", Status: 403, ExitCode: 9,
		Fix: fix("The NATS server's permissions do not allow this publish or subscription; ask the operator to grant the subject named in the detail, or use an identity that has it.", HasPlaceholders)},
	CodeOutputInvalid: {Title: "Output invalid", Status: 502, ExitCode: 8,
		Fix: fix("The tool's result does not match its output schema or the requested response_format; fix the tool or relax the format.", MaybeIncorrect)},
	CodeToolFailed: {Title: "Tool failed", Status: 502, ExitCode: 10,
		Fix: fix("Read the detail and the stderr tail; fix the arguments or the tool's environment.", MaybeIncorrect)},
	CodeHandlerError: {Title: "Handler error", Status: 500, ExitCode: 11,
		Fix: fix("The tool's handler crashed; report it to the tool's owner.", Unspecified)},
	CodeMissingTerminal: {Title: "Missing terminal event", Status: 502, ExitCode: 12,
		Fix: fix("The tool ended without a result or error; report it to the tool's owner.", Unspecified)},
	CodeStreamGap: {Title: "Stream gap", Status: 502, ExitCode: 13, Transient: true, RetryAfter: 1,
		Fix: fix("Events were lost in transit; retry the call if the tool is idempotent.", MaybeIncorrect)},
	CodeWorkerLost: {Title: "Worker lost", Status: 502, ExitCode: 14, Transient: true, RetryAfter: 1,
		Fix: fix("The worker stopped answering mid-call; retry if the tool is idempotent.", MaybeIncorrect)},
	CodeOverloaded: {Title: "Overloaded", Status: 503, ExitCode: 15, Transient: true, RetryAfter: 1,
		Fix: fix("Every worker slot is busy; retry after retry_after seconds or start more workers.", MachineApplicable)},
	CodeTaskNotFound: {Title: "Task not found", Status: 404, ExitCode: 16,
		Fix: fix("Check the task id with `toolmesh tasks ls`; a task is visible only to the identity that submitted it.", MaybeIncorrect)},
	CodeTaskExpired: {Title: "Task expired", Status: 410, ExitCode: 17,
		Fix: fix("The task is older than the task service's retention and its events and result are gone; submit it again if it is still wanted.", MaybeIncorrect)},
	CodeInputRequired: {Title: "Input required", Status: 428, ExitCode: 18,
		Fix: fix("The tool asked a question (see the question extension) that this call could not answer; call again able to answer: on a terminal, or with --answer JSON, or from a caller that declares it answers questions.", HasPlaceholders)},
	CodeInputTimeout: {Title: "Input timeout", Status: 408, ExitCode: 19,
		Fix: fix("The tool's question was not answered in time; call again and answer it sooner, or ask the operator for a longer question timeout.", MaybeIncorrect)},
	CodeDeclined: {Title: "Declined", Status: 403, ExitCode: 20,
		Fix: fix("The caller declined what the tool asked (an approval or a question it cannot go on without); call again only if the answer should now be yes.", Unspecified)},
	CodeTaskQuotaExceeded: {Title: "Task quota exceeded", Status: 507, ExitCode: 22,
		Fix: fix("Your tasks take all the task storage the operator allows you (the extension quota says which bound); cancel or stop submitting tasks until older ones pass the retention, or ask the operator for a larger quota.", MaybeIncorrect)},
	CodeToolConflict: {Title: "Tool conflict", Status: 409, ExitCode: 21,
		Fix: fix("Workers give different specs for this tool name, so a call may reach either; do not trust the description until the operator removes the workers giving the other spec (the extension conflicts names them).", Unspecified)},
	CodeSandboxReadDenied: {Title: "Sandbox denied a read", Status: 403, ExitCode: 40,
		Fix: fix("The tool's sandbox does not let its program read the path named in the extension path; use a path inside the tool's grants, or ask the operator to add it to sandbox.read.", MaybeIncorrect)},
	CodeSandboxWriteDenied: {Title: "Sandbox denied a write", Status: 403, ExitCode: 41,
		Fix: fix("The tool's sandbox does not let its program write the path named in the extension path; write inside the tool's grants, or ask the operator to add it to sandbox.write.", MaybeIncorrect)},
	CodeSandboxExecDenied: {Title: "Sandbox denied an exec", Status: 403, ExitCode: 42,
		Fix: fix("The tool's sandbox does not let its program run the program named in the extension path; ask the operator to add it to sandbox.read.", MaybeIncorrect)},
	CodeSandboxConnectDenied: {Title: "Sandbox denied a connection", Status: 403, ExitCode: 43,
		Fix: fix("The tool's sandbox does not let its program reach the network (or that port); do not retry unchanged; ask the operator to change sandbox.network if the tool needs it.", Unspecified)},
	CodeSandboxLimit: {Title: "Sandbox limit exceeded", Status: 422, ExitCode: 44,
		Fix: fix("The program hit the resource limit named in the extension limit; ask for less work in one call (smaller input, fewer files), or ask the operator to raise sandbox.limits.", MaybeIncorrect)},
	CodeConnectionLost: {Title: "Connection lost", Status: 503, ExitCode: 69, Transient: true, RetryAfter: 2,
		Fix: fix("Check that a NATS server is reachable at --server; for local development run `toolmesh dev`.", MaybeIncorrect)},
	CodeInternal: {Title: "Internal error", Status: 500, ExitCode: 70,
		Fix: fix("An unexpected error; report it with the instance URN.", Unspecified)},
	CodeInvalidConfig: {Title: "Invalid configuration", Status: 400, ExitCode: 78,
		Fix: fix("Fix the named field of the configuration and start again.", MaybeIncorrect)},
	CodeTimeout: {Title: "Timeout", Status: 504, ExitCode: 124, Transient: true, RetryAfter: 1,
		Fix: fix("Give the call a larger budget (--timeout) or make it do less.", MaybeIncorrect)},
	CodeCancelled: {Title: "Cancelled", Status: 499, ExitCode: 130,
		Fix: fix("The call was cancelled by its caller; call again if it is still wanted.", Unspecified)},
})

func fix(description string, a Applicability) SuggestedFix {
	return SuggestedFix{Description: description, Applicability: a}
}

// Lookup returns the registry entry of code. Codes outside the registry
// (a tool's own domain codes) report ok=false.
func Lookup(code Code) (CodeInfo, bool) {
	info, ok := registry[code]
	return info, ok
}

// withSlugs completes every entry of a registry with its code, slug and
// version, and its type URI under defaultBaseURI.
func withSlugs(r map[Code]CodeInfo) map[Code]CodeInfo {
	for code, info := range r {
		info.Code, info.Slug, info.Version = code, slugOf(code), "v1"
		info.defaultType = defaultBaseURI + "/" + info.Slug + "/" + info.Version
		r[code] = info
	}
	return r
}

// Codes lists every registered code, sorted, so documentation and tests can
// walk the whole registry.
func Codes() []Code {
	out := make([]Code, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// slugOf turns invalid_input into invalid-input, the URI path style of RFC 9457 examples.
func slugOf(c Code) string {
	b := []byte(c)
	for i, ch := range b {
		if ch == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}
