package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/toolmesh/toolmesh/internal/argtemplate"
)

// cliOutputFormat says how a bound program's stdout becomes the result.
type cliOutputFormat string

// The output formats of a CLI binding.
const (
	// outputJSON parses the whole of stdout as the result (the default).
	outputJSON cliOutputFormat = "json"
	// outputNDJSON streams each stdout line as a delta; the result is the array.
	outputNDJSON cliOutputFormat = "ndjson"
	// outputLines streams each line as a delta; the result is {"lines":[…],"stderr":"…"}.
	outputLines cliOutputFormat = "lines"
)

// cliBinding binds a tool to a command-line program, in version 2 of the
// shared CLI-binding format: a tools file's binding.cli. It lives beside
// the tool's spec, never in it, so the spec a worker announces cannot
// carry it (its cmd, args and env may hold secrets). Only Cmd is required; every other field is omitted
// when empty so a bare {"cmd":"cat"} round-trips byte-identically. Unknown
// fields are tolerated so later versions do not break this parser.
type cliBinding struct {
	// Cmd is the executable name (looked up on PATH) or an absolute path.
	Cmd string `json:"cmd"`
	// Args are fixed arguments placed before the rendered template.
	Args []string `json:"args,omitempty"`
	// ArgsTemplate is the per-call argv tail, split on white space into
	// tokens with {tool_id}, {params_json}, {dry_run} and {page_all} substituted.
	ArgsTemplate string `json:"args_template,omitempty"`
	// Env is added to the program's environment; values are verbatim except
	// "$ATD_BEARER", replaced by the caller's bearer token.
	Env map[string]string `json:"env,omitempty"`
	// OutputFormat is json (default), ndjson or lines.
	OutputFormat cliOutputFormat `json:"output_format,omitempty"`
	// PageAllFlag is passed for call_all; absent means paging is refused.
	PageAllFlag string `json:"page_all_flag,omitempty"`
	// DryRunFlag is passed for dry runs; absent means dry runs are refused.
	DryRunFlag string `json:"dry_run_flag,omitempty"`
	// ExitCodeMap maps non-zero exit codes to error codes; unmapped codes
	// are tool_failed and exit 0 never consults it. The value "ok_empty"
	// maps an exit to success instead (grep's "no match"): the output is
	// read as for exit 0, and an empty output is the format's empty result.
	ExitCodeMap map[int]string `json:"-"`
	// Stdin is what the program reads on standard input, a toolmesh
	// extension of the shared binding format: "" (nothing, /dev/null), "params_json" (the
	// call's args as they arrived) or "arg.NAME" (one arg: a string
	// verbatim, any other value as JSON; nothing when the arg is absent).
	Stdin string `json:"stdin,omitempty"`
}

// validate checks the binding: cmd present, output_format known, codes non-empty.
func (c cliBinding) validate() error {
	if c.Cmd == "" {
		return errors.New("field cmd is required")
	}
	switch c.OutputFormat {
	case "", outputJSON, outputNDJSON, outputLines:
	default:
		return fmt.Errorf("field output_format: unknown %q (want json, ndjson or lines)", c.OutputFormat)
	}
	if _, isArg := argtemplate.StdinArg(c.Stdin); c.Stdin != "" && c.Stdin != argtemplate.StdinParamsJSON && !isArg {
		return fmt.Errorf("field stdin: unknown %q (want params_json or arg.NAME)", c.Stdin)
	}
	if err := validateTemplate(c.ArgsTemplate); err != nil {
		return fmt.Errorf("field args_template: %w", err)
	}
	for k, v := range c.ExitCodeMap {
		if k == 0 {
			return errors.New("field exit_code_map: exit code 0 always succeeds and cannot be mapped")
		}
		if v == "" {
			return fmt.Errorf("field exit_code_map: code for exit %d is empty", k)
		}
	}
	return nil
}

// MarshalJSON writes the binding in declaration order with empty fields
// omitted and exit_code_map's keys in numeric order.
func (c cliBinding) MarshalJSON() ([]byte, error) {
	type plain cliBinding
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	if len(c.ExitCodeMap) == 0 {
		return b, nil
	}
	keys := make([]int, 0, len(c.ExitCodeMap))
	for k := range c.ExitCodeMap {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var m bytes.Buffer
	m.WriteString(`,"exit_code_map":{`)
	for i, k := range keys {
		if i > 0 {
			m.WriteByte(',')
		}
		m.WriteString(strconv.Quote(strconv.Itoa(k)))
		m.WriteByte(':')
		v, _ := json.Marshal(c.ExitCodeMap[k])
		m.Write(v)
	}
	m.WriteByte('}')
	return append(append(b[:len(b)-1], m.Bytes()...), '}'), nil
}

// UnmarshalJSON reads a binding: cmd is required, exit_code_map keys must be
// integers, unknown fields are ignored.
func (c *cliBinding) UnmarshalJSON(b []byte) error {
	type plain cliBinding
	var p struct {
		plain
		Cmd         *string           `json:"cmd"`
		ExitCodeMap map[string]string `json:"exit_code_map"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("cli binding: field %s: want %s, got a JSON %s", strings.TrimPrefix(te.Field, "plain."), te.Type, te.Value)
		}
		return fmt.Errorf("cli binding: %w", err)
	}
	if p.Cmd == nil {
		return errors.New("cli binding: field cmd is required")
	}
	out := cliBinding(p.plain)
	out.Cmd = *p.Cmd
	if p.ExitCodeMap != nil {
		out.ExitCodeMap = make(map[int]string, len(p.ExitCodeMap))
		for k, v := range p.ExitCodeMap {
			n, err := strconv.Atoi(k)
			if err != nil || strconv.Itoa(n) != k {
				return fmt.Errorf("cli binding: field exit_code_map: key %q is not an integer", k)
			}
			out.ExitCodeMap[n] = v
		}
	}
	if err := out.validate(); err != nil {
		return fmt.Errorf("cli binding: %w", err)
	}
	*c = out
	return nil
}

// validateTemplate refuses a flag pair that is not a whole token: a pair is
// two argv slots and cannot sit inside other text.
func validateTemplate(template string) error {
	for _, tok := range strings.Fields(template) {
		segs := argtemplate.ParseToken(tok)
		for _, s := range segs {
			if s.Flag != "" && len(segs) > 1 {
				return fmt.Errorf("token %q: the flag pair {arg.%s?%s} must be a whole token (it becomes two argv slots)", tok, s.Arg, s.Flag)
			}
		}
	}
	return nil
}
