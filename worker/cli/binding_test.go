package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolmesh/toolmesh/envelope"
	"github.com/toolmesh/toolmesh/envelope/provider"
	"github.com/toolmesh/toolmesh/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The binding format's encoding of a full binding, exit_code_map's keys in
// numeric order; decoded and encoded again it comes out the same.
func TestGoldenBinding(t *testing.T) {
	b := cliBinding{Cmd: "rg", Args: []string{"--json"}, ArgsTemplate: "{params_json} {dry_run} {page_all}",
		Env: map[string]string{"API_TOKEN": "$ATD_BEARER"}, OutputFormat: outputNDJSON, DryRunFlag: "--dry-run", PageAllFlag: "--all",
		ExitCodeMap: map[int]string{2: "invalid_args", 3: "auth_required", 10: "rate_limited"}}
	enc, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "binding_cli.json", enc, *update)
	var back cliBinding
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatalf("decode own output: %v", err)
	}
	if again, _ := json.Marshal(back); !bytes.Equal(again, enc) {
		t.Errorf("round trip changed the bytes:\n %s\n %s", enc, again)
	}
}

// The binding format's rule: {"cmd":"cat"} round-trips byte-identically.
func TestCliBindingRoundTrip(t *testing.T) {
	for _, in := range []string{
		`{"cmd":"cat"}`,
		`{"cmd":"rg","args":["--json"],"args_template":"{params_json}","env":{"A":"1","B":"$ATD_BEARER"},"output_format":"lines","page_all_flag":"--all","dry_run_flag":"-n","exit_code_map":{"2":"invalid_args","10":"x"}}`,
	} {
		var c cliBinding
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip:\n got %s\nwant %s", out, in)
		}
	}
	var c cliBinding
	if err := json.Unmarshal([]byte(`{"cmd":"cat","future_field":{"x":1}}`), &c); err != nil || c.Cmd != "cat" {
		t.Errorf("unknown fields must be tolerated: %v", err)
	}
}

// Each malformed binding is rejected with an error that names the field.
func TestBindingDecodeRejects(t *testing.T) {
	cases := []struct{ name, in, wantField string }{
		{"cli missing cmd", `{"args":["x"]}`, "cmd"},
		{"cli bad exit key", `{"cmd":"x","exit_code_map":{"two":"x"}}`, "exit_code_map"},
		{"cli exit key zero", `{"cmd":"x","exit_code_map":{"0":"x"}}`, "exit_code_map"},
		{"cli bad format", `{"cmd":"x","output_format":"xml"}`, "output_format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := json.Unmarshal([]byte(c.in), new(cliBinding))
			if err == nil {
				t.Fatalf("decoded %s without error", c.in)
			}
			if !strings.Contains(err.Error(), c.wantField) {
				t.Errorf("error %q does not name %q", err, c.wantField)
			}
		})
	}
}

// A tool whose binding has no cmd is refused, naming cmd, whether it comes
// from a tools file or is handed to the handler directly.
func TestBadBindingRefused(t *testing.T) {
	_, err := Parse([]byte(`{"tools":[{"name":"a","binding":{"cli":{}}}]}`))
	if err == nil || !strings.Contains(err.Error(), "cmd") {
		t.Errorf("tools file: err %v, want one naming cmd", err)
	}
	_, err = newProbedHandler(fileTool{Spec: envelope.ToolSpec{Name: "a"}, Binding: &cliBinding{}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "field binding.cli: field cmd is required") {
		t.Errorf("handler: err %v, want one naming binding.cli's cmd", err)
	}
}

// FuzzCliBinding: whatever decodes re-encodes and decodes again to the
// same bytes (no panic, no drift).
func FuzzCliBinding(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "binding_cli.json")); err == nil {
		f.Add(b)
	}
	for _, s := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"cmd":"x","exit_code_map":{"-1":"y","+2":"z"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v cliBinding
		if err := json.Unmarshal(data, &v); err != nil {
			return
		}
		enc, err := json.Marshal(&v)
		if err != nil {
			return
		}
		var w cliBinding
		if err := json.Unmarshal(enc, &w); err != nil {
			t.Fatalf("own output %s does not decode: %v", enc, err)
		}
		again, err := json.Marshal(&w)
		if err != nil || string(again) != string(enc) {
			t.Fatalf("unstable round trip:\n %s\n %s (%v)", enc, again, err)
		}
	})
}

// A binding is worker-local and may hold secrets: no export of a tools
// file's specs carries any part of it, whatever the provider.
func TestExportNeverCarriesTheBinding(t *testing.T) {
	f, err := Parse([]byte(`{"tools":[{"name":"mail.send","description":"Send mail",
		"input_schema":{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false},
		"binding":{"cli":{"cmd":"/opt/secret-mailer","args":["--token=s3cr3t-arg"],"env":{"MAIL_PASSWORD":"hunter2-env"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []provider.ExportOptions{{Provider: provider.OpenAI}, {Provider: provider.OpenAIResponses},
		{Provider: provider.Anthropic}, {Provider: provider.Gemini}, {Provider: provider.Gemini, Model: "gemini-2.0-flash"},
		{Provider: provider.MCP}} {
		ts, err := provider.Export(f.Specs(), o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ts)
		if n := strings.Count(string(b), `"mail_send"`) + strings.Count(string(b), `"mail.send"`); n == 0 || len(ts.Tools) != 1 {
			t.Fatalf("%s %s: %d tools exported: %s", o.Provider, o.Model, len(ts.Tools), b)
		}
		for _, secret := range []string{"secret-mailer", "s3cr3t-arg", "hunter2-env", "MAIL_PASSWORD"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s %s export carries %q from the binding: %s", o.Provider, o.Model, secret, b)
			}
		}
	}
}
