package argtemplate

// BindingFields lists the JSON field names of a CLI binding, so loaders
// can warn about a misspelt field, which the binding format requires them to
// tolerate (later versions add fields that older parsers must skip).
func BindingFields() []string {
	return []string{"cmd", "args", "args_template", "env", "output_format", "page_all_flag", "dry_run_flag", "exit_code_map", "stdin"}
}
