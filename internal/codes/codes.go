package codes

import "sort"

// DefaultBaseURI is the base of problem type URIs unless a worker or
// caller configures another: {base}/{slug}/{version}.
const DefaultBaseURI = "https://toolmesh.dev/problems"

// The applicabilities of the default fixes, as envelope's Applicability
// values spell them.
const (
	unspecified       = "unspecified"
	machineApplicable = "machine_applicable"
	maybeIncorrect    = "maybe_incorrect"
	hasPlaceholders   = "has_placeholders"
)

// Info is one registry entry: everything needed to build a Problem for
// the code and to act on it.
type Info struct {
	Code string
	// DefaultType is the type URI under DefaultBaseURI, made once.
	DefaultType string
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
	// Fix is the default suggested fix shown to humans and agents, and
	// FixApplicability how safely an agent may apply it.
	Fix, FixApplicability string
}

// registry is the one code registry, each entry complete with its code,
// slug and version (filled in once by withSlugs: every Problem reads them).
var registry = withSlugs(map[string]entry{
	"invalid_input": {Title: "Invalid input", Status: 400, ExitCode: 2,
		Fix: fix("Correct the arguments so they satisfy the tool's input schema (`toolmesh tools describe TOOL` shows it), then retry.", hasPlaceholders)},
	"tool_not_found": {Title: "Tool not found", Status: 404, ExitCode: 3,
		Fix: fix("Check the tool name with `toolmesh tools list`, or start a worker that hosts it.", maybeIncorrect)},
	"dry_run_unsupported": {Title: "Dry run unsupported", Status: 422, ExitCode: 4,
		Fix: fix("Call the tool without dry_run, or add a dry_run_flag to its binding.", maybeIncorrect)},
	"pagination_unsupported": {Title: "Pagination unsupported", Status: 422, ExitCode: 5,
		Fix: fix("Call the tool without paging, or add a page_all_flag to its binding.", maybeIncorrect)},
	"payload_too_large": {Title: "Payload too large", Status: 413, ExitCode: 6,
		Fix: fix("Send smaller arguments, or raise the server's max_payload.", maybeIncorrect)},
	"unauthorized": {Title: "Unauthorized", Status: 401, ExitCode: 7,
		Fix: fix("Provide valid credentials (bearer token or NATS credentials) and retry.", hasPlaceholders)},
	"forbidden": {Title: "Forbidden", Status: 403, ExitCode: 9,
		Fix: fix("The NATS server's permissions do not allow this publish or subscription; ask the operator to grant the subject named in the detail, or use an identity that has it.", hasPlaceholders)},
	"output_invalid": {Title: "Output invalid", Status: 502, ExitCode: 8,
		Fix: fix("The tool's result does not match its output schema or the requested response_format; fix the tool or relax the format.", maybeIncorrect)},
	"tool_failed": {Title: "Tool failed", Status: 502, ExitCode: 10,
		Fix: fix("Read the detail and the stderr tail; fix the arguments or the tool's environment.", maybeIncorrect)},
	"handler_error": {Title: "Handler error", Status: 500, ExitCode: 11,
		Fix: fix("The tool's handler crashed; report it to the tool's owner.", unspecified)},
	"missing_terminal": {Title: "Missing terminal event", Status: 502, ExitCode: 12,
		Fix: fix("The tool ended without a result or error; report it to the tool's owner.", unspecified)},
	"stream_gap": {Title: "Stream gap", Status: 502, ExitCode: 13, Transient: true, RetryAfter: 1,
		Fix: fix("Events were lost in transit; retry the call if the tool is idempotent.", maybeIncorrect)},
	"worker_lost": {Title: "Worker lost", Status: 502, ExitCode: 14, Transient: true, RetryAfter: 1,
		Fix: fix("The worker stopped answering mid-call; retry if the tool is idempotent.", maybeIncorrect)},
	"overloaded": {Title: "Overloaded", Status: 503, ExitCode: 15, Transient: true, RetryAfter: 1,
		Fix: fix("Every worker slot is busy; retry after retry_after seconds or start more workers.", machineApplicable)},
	"task_not_found": {Title: "Task not found", Status: 404, ExitCode: 16,
		Fix: fix("Check the task id with `toolmesh tasks ls`; a task is visible only to the identity that submitted it.", maybeIncorrect)},
	"task_expired": {Title: "Task expired", Status: 410, ExitCode: 17,
		Fix: fix("The task is older than the task service's retention and its events and result are gone; submit it again if it is still wanted.", maybeIncorrect)},
	"input_required": {Title: "Input required", Status: 428, ExitCode: 18,
		Fix: fix("The tool asked a question (see the question extension) that this call could not answer; call again able to answer: on a terminal, or with --answer JSON, or from a caller that declares it answers questions.", hasPlaceholders)},
	"input_timeout": {Title: "Input timeout", Status: 408, ExitCode: 19,
		Fix: fix("The tool's question was not answered in time; call again and answer it sooner, or ask the operator for a longer question timeout.", maybeIncorrect)},
	"declined": {Title: "Declined", Status: 403, ExitCode: 20,
		Fix: fix("The caller declined what the tool asked (an approval or a question it cannot go on without); call again only if the answer should now be yes.", unspecified)},
	"task_quota_exceeded": {Title: "Task quota exceeded", Status: 507, ExitCode: 22,
		Fix: fix("Your tasks take all the task storage the operator allows you (the extension quota says which bound); cancel or stop submitting tasks until older ones pass the retention, or ask the operator for a larger quota.", maybeIncorrect)},
	"tool_conflict": {Title: "Tool conflict", Status: 409, ExitCode: 21,
		Fix: fix("Workers give different specs for this tool name, so a call may reach either; do not trust the description until the operator removes the workers giving the other spec (the extension conflicts names them).", unspecified)},
	"sandbox_read_denied": {Title: "Sandbox denied a read", Status: 403, ExitCode: 40,
		Fix: fix("The tool's sandbox does not let its program read the path named in the extension path; use a path inside the tool's grants, or ask the operator to add it to sandbox.read.", maybeIncorrect)},
	"sandbox_write_denied": {Title: "Sandbox denied a write", Status: 403, ExitCode: 41,
		Fix: fix("The tool's sandbox does not let its program write the path named in the extension path; write inside the tool's grants, or ask the operator to add it to sandbox.write.", maybeIncorrect)},
	"sandbox_exec_denied": {Title: "Sandbox denied an exec", Status: 403, ExitCode: 42,
		Fix: fix("The tool's sandbox does not let its program run the program named in the extension path; ask the operator to add it to sandbox.read.", maybeIncorrect)},
	"sandbox_connect_denied": {Title: "Sandbox denied a connection", Status: 403, ExitCode: 43,
		Fix: fix("The tool's sandbox does not let its program reach the network (or that port); do not retry unchanged; ask the operator to change sandbox.network if the tool needs it.", unspecified)},
	"sandbox_limit_exceeded": {Title: "Sandbox limit exceeded", Status: 422, ExitCode: 44,
		Fix: fix("The program hit the resource limit named in the extension limit; ask for less work in one call (smaller input, fewer files), or ask the operator to raise sandbox.limits.", maybeIncorrect)},
	"connection_lost": {Title: "Connection lost", Status: 503, ExitCode: 69, Transient: true, RetryAfter: 2,
		Fix: fix("Check that a NATS server is reachable at --server; for local development run `toolmesh dev`.", maybeIncorrect)},
	"internal_error": {Title: "Internal error", Status: 500, ExitCode: 70,
		Fix: fix("An unexpected error; report it with the instance URN.", unspecified)},
	"invalid_config": {Title: "Invalid configuration", Status: 400, ExitCode: 78,
		Fix: fix("Fix the named field of the configuration and start again.", maybeIncorrect)},
	"timeout": {Title: "Timeout", Status: 504, ExitCode: 124, Transient: true, RetryAfter: 1,
		Fix: fix("Give the call a larger budget (--timeout) or make it do less.", maybeIncorrect)},
	"cancelled": {Title: "Cancelled", Status: 499, ExitCode: 130,
		Fix: fix("The call was cancelled by its caller; call again if it is still wanted.", unspecified)},
})

type fixText struct{ description, applicability string }

func fix(description, applicability string) fixText {
	return fixText{description, applicability}
}

// Lookup returns the registry entry of code. Codes outside the registry
// (a tool's own domain codes) report ok=false.
func Lookup[C ~string](code C) (Info, bool) {
	info, ok := registry[string(code)]
	return info, ok
}

// withSlugs completes every entry of a registry with its code, slug,
// version, fix and its type URI under DefaultBaseURI.
func withSlugs(r map[string]entry) map[string]Info {
	out := make(map[string]Info, len(r))
	for code, e := range r {
		info := Info{Code: code, Slug: slugOf(code), Version: "v1", Title: e.Title, Status: e.Status, ExitCode: e.ExitCode,
			Transient: e.Transient, RetryAfter: e.RetryAfter, Fix: e.Fix.description, FixApplicability: e.Fix.applicability}
		info.DefaultType = DefaultBaseURI + "/" + info.Slug + "/" + info.Version
		out[code] = info
	}
	return out
}

// entry is a registry entry as written: what withSlugs does not fill in.
type entry struct {
	Title            string
	Status, ExitCode int
	Transient        bool
	RetryAfter       float64
	Fix              fixText
}

// All lists every registered code, sorted, so documentation and tests can
// walk the whole registry.
func All() []string {
	out := make([]string, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// slugOf turns invalid_input into invalid-input, the URI path style of RFC 9457 examples.
func slugOf(c string) string {
	b := []byte(c)
	for i, ch := range b {
		if ch == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}
