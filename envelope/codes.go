package envelope

// Code is a machine-readable error code: the snake_case name an agent
// switches on. Every code the mesh itself emits is in the registry (one
// reference page each under docs/problems); tools may report their own domain codes (for example through a
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
