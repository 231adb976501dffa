package argtemplate

import "strings"

// BearerPlaceholder is the binding env value replaced by the caller's
// bearer token. Its spelling is fixed by the shared CLI-binding format, so
// tools files written for other implementations work unchanged.
const BearerPlaceholder = "$ATD_BEARER"

// ExitOKEmpty in an exit_code_map maps an exit to success: the output is
// read as for exit 0, and an empty output is the format's empty result
// (json: null, ndjson: [], lines: no lines) rather than an error.
const ExitOKEmpty = "ok_empty"

// StdinParamsJSON is the binding's stdin value that feeds the call's args
// as JSON.
const StdinParamsJSON = "params_json"

// StdinArg returns the arg named by a binding's stdin of the form
// "arg.NAME".
func StdinArg(stdin string) (string, bool) {
	name, ok := strings.CutPrefix(stdin, "arg.")
	return name, ok && name != ""
}
