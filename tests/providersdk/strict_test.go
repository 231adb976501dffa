package providersdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"
)

// testdata is envelope/provider's golden directory.
var testdata = filepath.Join("..", "..", "envelope", "provider", "testdata")

func readGolden(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// roundTrip decodes raw into an OpenAI or Anthropic SDK param type with
// unknown fields refused. Those SDKs' decoders (Stainless apijson) cannot
// reject unknown fields — they drop them silently, and ExtraFields stays
// empty — so the check is the equivalent one: decode, re-encode with the
// SDK's own encoder and demand the same JSON, member for member. A member
// the SDK type lacks is lost on the way and the comparison names it.
func roundTrip(raw []byte, into any) error {
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("the SDK refuses it: %w", err)
	}
	again, err := json.Marshal(into)
	if err != nil {
		return fmt.Errorf("the SDK cannot re-encode it: %w", err)
	}
	return sameJSON(raw, again)
}

// strictGenai decodes raw into a genai type with DisallowUnknownFields
// (genai's request types are plain structs without custom decoders), and
// re-encodes and compares as well, which catches values the SDK changes.
func strictGenai(raw []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("genai refuses it: %w", err)
	}
	again, err := json.Marshal(into)
	if err != nil {
		return err
	}
	return sameJSON(raw, again)
}

// must fails the test with what and the document when check failed.
func must(t *testing.T, what string, raw []byte, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v\n%s", what, err, raw)
	}
}

// wantEvery fails t for each of parts (what names one, kind what it must
// be) for which is does not hold.
func wantEvery[P any](t *testing.T, what, kind string, parts []P, is func(P) bool) {
	t.Helper()
	for j, p := range parts {
		if !is(p) {
			t.Errorf("%s %d is not %s", what, j, kind)
		}
	}
}

// sameJSON compares two documents as JSON values, naming the first
// member that differs.
func sameJSON(sent, sdk []byte) error {
	var a, b any
	if err := json.Unmarshal(sent, &a); err != nil {
		return err
	}
	if err := json.Unmarshal(sdk, &b); err != nil {
		return err
	}
	if path, ok := firstDiff("", a, b); !ok {
		return fmt.Errorf("the SDK type does not carry %s as sent; it re-encodes as %s", path, sdk)
	}
	return nil
}

func firstDiff(path string, a, b any) (string, bool) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k, v := range am {
			if _, ok := bm[k]; !ok {
				return path + "/" + k + " (unknown to the SDK)", false
			}
			if p, ok := firstDiff(path+"/"+k, v, bm[k]); !ok {
				return p, false
			}
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				return path + "/" + k + " (added by the SDK)", false
			}
		}
		return "", true
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			if p, ok := firstDiff(path+"/"+strconv.Itoa(i), as[i], bs[i]); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(a, b)
}

// The checks must fail on a member the SDK type lacks, or every test
// below would pass vacuously.
func TestUnknownFieldsAreCaught(t *testing.T) {
	bad := []byte(`{"type":"function","function":{"name":"x","parameters":{},"bogus":1}}`)
	if err := roundTrip(bad, new(openai.ChatCompletionFunctionToolParam)); err == nil {
		t.Error("round-trip check let an unknown member through")
	}
	if err := strictGenai([]byte(`{"name":"x","bogus":1}`), new(genai.FunctionDeclaration)); err == nil {
		t.Error("genai check let an unknown member through")
	}
	if err := roundTrip([]byte(`{"type":"function","function":{"name":"x","parameters":{},"strict":true}}`), new(openai.ChatCompletionFunctionToolParam)); err != nil {
		t.Errorf("a valid tool was refused: %v", err)
	}
}
