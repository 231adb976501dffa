// Package argtemplate is the grammar of a CLI binding's args_template
// (literal text, the binding format's fixed placeholders and toolmesh's
// {arg.NAME} and {arg.NAME?FLAG}) and the binding's other fixed values
// (the bearer placeholder, stdin's forms, ok_empty), shared by the
// binding's validation in envelope and its running in worker/cli.
//
// The binding's shape is envelope's (CliBindingConfig), and building a
// call's argv from a template is worker/cli's; this package imports
// neither.
package argtemplate
