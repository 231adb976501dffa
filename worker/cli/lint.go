package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"sort"
	"strings"

	"github.com/toolmesh/toolmesh/internal/argtemplate"
	"github.com/toolmesh/toolmesh/internal/configkeys"

	"github.com/toolmesh/toolmesh/envelope"
)

// This file holds the load-time checks that make a tools file's mistakes
// visible at start rather than at the first call: errors name the tool and
// the field, misspelt fields get the closest known name.

// jsonFields lists the JSON member names of a struct type (for suggestions).
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// decodeError restates a strict decode error of raw (an object with the
// members of known) as "field NAME: what is wrong": encoding/json names
// neither a field whose own decoder failed (a duration) nor the right
// spelling of an unknown one.
func decodeError(raw json.RawMessage, err error, known []string) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("field %s: want %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		if best := closest(name, known); best != "" {
			return fmt.Sprintf("%s (did you mean %s?)", msg, best)
		}
		return msg
	}
	if field := failingDuration(raw, msg, ""); field != "" {
		return fmt.Sprintf("field %s: %v (want a duration such as \"30s\")", field, err)
	}
	return msg
}

// failingDuration finds the duration member of raw (or of its defaults
// object) whose decoding fails with msg.
func failingDuration(raw json.RawMessage, msg, prefix string) string {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return ""
	}
	for _, name := range sortedKeys(members) {
		if name == "defaults" && prefix == "" {
			if f := failingDuration(members[name], msg, "defaults."); f != "" {
				return f
			}
		}
		var d envelope.Duration
		if isDurationField(name) && json.Unmarshal(members[name], &d) != nil {
			if derr := json.Unmarshal(members[name], &d); derr.Error() == msg {
				return prefix + name
			}
		}
	}
	return ""
}

func isDurationField(name string) bool {
	return name == "timeout" || name == "kill_grace"
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkArgRefs looks for {arg.NAME} placeholders and a stdin arg that
// name no property of an input schema that lists its properties: an error
// when the schema closes the object (no call can ever set that arg), a
// warning when it is open (a call may, but a typo is likelier).
func checkArgRefs(label string, spec envelope.ToolSpec, b *cliBinding) (warnings []string, err error) {
	var schema struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(spec.InputSchema, &schema) != nil || schema.Properties == nil {
		return nil, nil
	}
	closed := string(schema.AdditionalProperties) == "false"
	props := sortedKeys(schema.Properties)
	check := func(field, name string) error {
		if _, ok := schema.Properties[name]; ok {
			return nil
		}
		msg := fmt.Sprintf("field binding.cli.%s: arg.%s names no property of input_schema", field, name)
		if best := closest(name, props); best != "" {
			msg += fmt.Sprintf(" (did you mean arg.%s?)", best)
		}
		if closed {
			return errors.New(msg)
		}
		warnings = append(warnings, label+": "+msg)
		return nil
	}
	refs := argtemplate.Args(b.ArgsTemplate)
	for _, name := range refs {
		if err := check("args_template", name); err != nil {
			return nil, err
		}
	}
	if name, ok := argtemplate.StdinArg(b.Stdin); ok {
		if err := check("stdin", name); err != nil {
			return nil, err
		}
	}
	return warnings, nil
}

// checkCmd finds the binding's program the way the call will: on PATH, or
// at the given path, and executable.
func checkCmd(tool, cmd string) error {
	if _, err := exec.LookPath(cmd); err != nil {
		reason := "is not found on PATH"
		if strings.ContainsRune(cmd, '/') {
			reason = "does not exist or is not executable"
		}
		return envelope.Problemf(envelope.CodeInvalidConfig, "tool %s: field binding.cli.cmd: %q %s (%v)", tool, cmd, reason, err).
			WithFix("Install the program, fix the name, or give its absolute path in binding.cli.cmd.", envelope.HasPlaceholders)
	}
	return nil
}

// closest returns the known name nearest to name when it is near enough
// to be a likely typo.
func closest(name string, known []string) string { return configkeys.Near(name, known) }
