// Package argtemplate is the grammar of a CLI binding's args_template
// (literal text, the binding format's fixed placeholders and toolmesh's
// {arg.NAME} and {arg.NAME?FLAG}) and the binding's other fixed values
// (the bearer placeholder, stdin's forms, ok_empty), shared by the
// binding's validation and running in worker/cli and the tools file's key
// check in internal/configkeys.
//
// The binding's shape and building a call's argv from a template are
// worker/cli's; this package imports neither.
package argtemplate
