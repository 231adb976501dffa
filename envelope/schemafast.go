package envelope

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolmesh/toolmesh/internal/wire"
)

// The fast path. Validating a call's args with the library costs about
// 2 µs and 19 allocations per call (decode into maps, then the
// validator), most of the mesh's own budget; the fast path takes about
// 60 ns and allocates nothing (BenchmarkSchemaValidate: about 40x, 0
// allocations against 19). Most tool input schemas are a
// flat object of scalar properties, which can be checked by scanning the
// args bytes directly, with no allocation. fastSchema does that for a small
// subset of JSON Schema and answers only "certainly valid": on a violation,
// or on anything it is unsure of, Validate asks the library, so every
// Violation still comes from the library, word for word.
//
// The subset (anything else anywhere gives no fast path):
//   - the root: "type":"object" (or no type), "properties",
//     "required", "additionalProperties" as a boolean, "$schema" naming
//     draft-06, draft-07, 2019-09 or 2020-12, "$id", and annotations;
//   - each property: "type" (string, number, integer, boolean, null or an
//     array of those), "enum" and "const" of scalars, "minimum",
//     "maximum", "exclusiveMinimum", "exclusiveMaximum" (numbers),
//     "minLength", "maxLength", and annotations; or the schema true.

// jsonKind is a JSON value's type as a bit, so a set of types is a mask.
type jsonKind uint8

const (
	kindNull jsonKind = 1 << iota
	kindBoolean
	kindString
	kindNumber
	kindInteger // only in a type set: a number with an integral value
	kindNested  // an object or array: only an unconstrained value may be one
)

// maxFastProps bounds the names a fast schema knows: one bit each.
const maxFastProps = 64

// fastSchema checks a document against the flat-object subset.
type fastSchema struct {
	props    []fastProp // the names of "properties" and "required"
	required uint64     // bit i set: props[i] must be present
	closed   bool       // additionalProperties: false
}

// fastProp is one known member name and what its value must be (nil:
// anything).
type fastProp struct {
	name     string
	check    *fastValue
	declared bool // named in "properties", so never an additional property
}

// fastValue is a property's constraints; a constraint of one kind (a
// string's length, a number's bounds) holds for values of other kinds, as
// in JSON Schema.
type fastValue struct {
	types          jsonKind   // 0: any type
	oneOfs         [][]scalar // enum, then const: each needs a member equal to the value
	bounds         []bound
	minLen, maxLen int // -1: none
}

// bound is one of minimum, maximum, exclusiveMinimum, exclusiveMaximum:
// the value compared with limit must give one of the results in ok
// (bit cmp+1).
type bound struct {
	limit decimal
	ok    uint8
}

// scalar is an enum or const member: a JSON null, boolean, string or number.
type scalar struct {
	kind jsonKind
	b    bool
	s    string // a member's text
	str  []byte // a document's text, when it has no escapes
	num  decimal
}

// isAnnotation reports whether keyword k never makes a document invalid.
func isAnnotation(k string) bool {
	switch k {
	case "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment":
		return true
	}
	return false
}

// fastDialect reports whether $schema value s names a dialect whose
// meaning of the subset's keywords the fast path implements (numeric
// exclusive bounds, const): draft-06 and later, as the library reads
// $schema. Draft-04 (boolean exclusiveMinimum) is left to the library.
func fastDialect(s string) bool {
	s, ok := strings.CutPrefix(s, "http://")
	if !ok {
		s, _ = strings.CutPrefix(s, "https://")
	}
	switch strings.TrimSuffix(s, "#") {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema", "json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft-07/schema", "json-schema.org/draft-06/schema":
		return true
	}
	return false
}

// compileFast returns the fast path of the decoded schema doc, or nil when
// doc uses anything outside the subset.
func compileFast(doc any) *fastSchema {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	fs := &fastSchema{}
	for k, v := range root {
		if !fs.rootKeyword(k, v) {
			return nil
		}
	}
	if req, ok := root["required"]; ok {
		if !fs.addRequired(req) {
			return nil
		}
	}
	return fs
}

// rootKeyword applies one root keyword, reporting false outside the subset.
// "required" is applied after "properties", by compileFast.
func (fs *fastSchema) rootKeyword(k string, v any) bool {
	switch k {
	case "type":
		return v == "object"
	case "$schema":
		s, ok := v.(string)
		return ok && fastDialect(s)
	case "$id":
		_, ok := v.(string)
		return ok
	case "additionalProperties":
		b, ok := v.(bool)
		fs.closed = ok && !b
		return ok
	case "properties":
		return fs.addProperties(v)
	case "required":
		return true
	}
	return isAnnotation(k)
}

func (fs *fastSchema) addProperties(v any) bool {
	props, ok := v.(map[string]any)
	if !ok || len(props) > maxFastProps {
		return false
	}
	for name, ps := range props {
		check, ok := compileValue(ps)
		if !ok {
			return false
		}
		fs.props = append(fs.props, fastProp{name: name, check: check, declared: true})
	}
	return true
}

func (fs *fastSchema) addRequired(v any) bool {
	names, ok := v.([]any)
	if !ok {
		return false
	}
	for _, n := range names {
		name, ok := n.(string)
		if !ok {
			return false
		}
		i := fs.index(name)
		if i < 0 {
			if len(fs.props) == maxFastProps {
				return false
			}
			fs.props = append(fs.props, fastProp{name: name})
			i = len(fs.props) - 1
		}
		fs.required |= 1 << i
	}
	return true
}

// index is the position of name among the known names, -1 if unknown.
func (fs *fastSchema) index(name string) int {
	for i := range fs.props {
		if fs.props[i].name == name {
			return i
		}
	}
	return -1
}

// compileValue compiles a property's schema: nil for one that accepts
// anything, ok false outside the subset.
func compileValue(ps any) (*fastValue, bool) {
	if b, ok := ps.(bool); ok {
		return nil, b
	}
	m, ok := ps.(map[string]any)
	if !ok {
		return nil, false
	}
	fv := &fastValue{minLen: -1, maxLen: -1}
	for k, v := range m {
		if !fv.keyword(k, v) {
			return nil, false
		}
	}
	if fv.types == 0 && fv.oneOfs == nil && fv.bounds == nil && fv.minLen < 0 && fv.maxLen < 0 {
		return nil, true
	}
	return fv, true
}

// keyword applies one property keyword, reporting false outside the subset.
func (fv *fastValue) keyword(k string, v any) bool {
	switch k {
	case "type":
		return fv.setTypes(v)
	case "enum":
		list, ok := v.([]any)
		return ok && len(list) > 0 && fv.addOneOf(list)
	case "const":
		return fv.addOneOf([]any{v})
	case "minimum":
		return fv.addBound(v, 1<<1|1<<2) // cmp >= 0
	case "maximum":
		return fv.addBound(v, 1<<0|1<<1) // cmp <= 0
	case "exclusiveMinimum":
		return fv.addBound(v, 1<<2) // cmp > 0
	case "exclusiveMaximum":
		return fv.addBound(v, 1<<0) // cmp < 0
	case "minLength":
		return lengthLimit(v, &fv.minLen)
	case "maxLength":
		return lengthLimit(v, &fv.maxLen)
	}
	return isAnnotation(k)
}

func (fv *fastValue) setTypes(v any) bool {
	if s, ok := v.(string); ok {
		fv.types = kindOfName(s)
		return fv.types != 0
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return false
	}
	for _, e := range list {
		s, _ := e.(string)
		k := kindOfName(s)
		if k == 0 {
			return false
		}
		fv.types |= k
	}
	return true
}

// kindOfName is the kind a scalar "type" name names, 0 for any other.
func kindOfName(s string) jsonKind {
	switch s {
	case "null":
		return kindNull
	case "boolean":
		return kindBoolean
	case "string":
		return kindString
	case "number":
		return kindNumber
	case "integer":
		return kindInteger
	}
	return 0
}

func (fv *fastValue) addOneOf(list []any) bool {
	members := make([]scalar, 0, len(list))
	for _, e := range list {
		var sc scalar
		switch e := e.(type) {
		case nil:
			sc.kind = kindNull
		case bool:
			sc.kind, sc.b = kindBoolean, e
		case string:
			sc.kind, sc.s = kindString, e
		case json.Number:
			sc.kind = kindNumber
			if !sc.num.parse([]byte(e)) {
				return false
			}
		default:
			return false
		}
		members = append(members, sc)
	}
	fv.oneOfs = append(fv.oneOfs, members)
	return true
}

func (fv *fastValue) addBound(v any, ok uint8) bool {
	n, isNum := v.(json.Number)
	b := bound{ok: ok}
	if !isNum || !b.limit.parse([]byte(n)) {
		return false
	}
	fv.bounds = append(fv.bounds, b)
	return true
}

// lengthLimit sets *dst from a minLength or maxLength written as a plain
// non-negative integer.
func lengthLimit(v any, dst *int) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i < 0 {
		return false
	}
	*dst = i
	return true
}

// valid reports whether doc is certainly a valid instance: a JSON object
// whose members all pass. false means "ask the library", not "invalid".
func (fs *fastSchema) valid(doc []byte) bool {
	i := wire.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	i = wire.SkipSpace(doc, i+1)
	var seen uint64
	if i < len(doc) && doc[i] == '}' {
		return fs.required == 0 && wire.SkipSpace(doc, i+1) == len(doc)
	}
	for {
		next, ok := fs.member(doc, i, &seen)
		if !ok {
			return false
		}
		i = wire.SkipSpace(doc, next)
		if i >= len(doc) {
			return false
		}
		if doc[i] == '}' {
			return seen&fs.required == fs.required && wire.SkipSpace(doc, i+1) == len(doc)
		}
		if doc[i] != ',' {
			return false
		}
		i = wire.SkipSpace(doc, i+1)
	}
}

// member checks the member (name, colon, value) at doc[i], marking a known
// name in seen, and returns the index just past its value.
func (fs *fastSchema) member(doc []byte, i int, seen *uint64) (int, bool) {
	end, escaped, ok := scanString(doc, i)
	if !ok || escaped || !utf8.Valid(doc[i+1:end-1]) {
		return 0, false // an escaped name might decode to a known one
	}
	k := fs.index(string(doc[i+1 : end-1]))
	var check *fastValue
	switch {
	case k >= 0 && *seen&(1<<k) != 0:
		return 0, false // duplicate: the library keeps the last
	case k >= 0 && (fs.props[k].declared || !fs.closed):
		*seen |= 1 << k
		check = fs.props[k].check
	case fs.closed:
		return 0, false // an additional property, or required but not declared
	}
	i = wire.SkipSpace(doc, end)
	if i >= len(doc) || doc[i] != ':' {
		return 0, false
	}
	return checkValue(doc, wire.SkipSpace(doc, i+1), check)
}

// checkValue checks the value at doc[i] against fv (nil: anything) and
// returns the index just past it.
func checkValue(doc []byte, i int, fv *fastValue) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch c := doc[i]; {
	case c == '"':
		end, escaped, ok := scanString(doc, i)
		return end, ok && fv.string(doc[i+1:end-1], escaped)
	case c == '-' || c >= '0' && c <= '9':
		end, ok := scanNumber(doc, i)
		return end, ok && fv.number(doc[i:end])
	case c == 't' || c == 'f' || c == 'n':
		return checkLiteral(doc, i, fv)
	case c == '{' || c == '[':
		end := wire.ValueEnd(doc, i)
		return end, fv == nil && json.Valid(doc[i:end])
	}
	return 0, false
}

// checkLiteral checks true, false or null at doc[i].
func checkLiteral(doc []byte, i int, fv *fastValue) (int, bool) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(doc)-i >= len(lit) && string(doc[i:i+len(lit)]) == lit {
			sc := scalar{kind: kindBoolean, b: lit == "true"}
			if lit == "null" {
				sc.kind = kindNull
			}
			return i + len(lit), fv.scalar(&sc)
		}
	}
	return 0, false
}

// scalar checks a null or boolean value.
func (fv *fastValue) scalar(v *scalar) bool {
	return fv == nil || fv.allows(v.kind) && fv.inOneOfs(v)
}

// string checks a string value with raw (unquoted, still escaped) content.
func (fv *fastValue) string(raw []byte, escaped bool) bool {
	if fv == nil {
		return true
	}
	if !fv.allows(kindString) {
		return false
	}
	if fv.oneOfs == nil && fv.minLen < 0 && fv.maxLen < 0 {
		return true
	}
	if escaped || !utf8.Valid(raw) {
		return false // the decoded text is not raw: let the library count
	}
	n := utf8.RuneCount(raw)
	if fv.minLen >= 0 && n < fv.minLen || fv.maxLen >= 0 && n > fv.maxLen {
		return false
	}
	return fv.inOneOfs(&scalar{kind: kindString, str: raw})
}

// number checks a number value (one valid JSON number token).
func (fv *fastValue) number(raw []byte) bool {
	if fv == nil {
		return true
	}
	if fv.types == 0 && fv.oneOfs == nil && fv.bounds == nil {
		return true
	}
	v := scalar{kind: kindNumber}
	if !v.num.parse(raw) {
		return false // too long or too large to compare exactly
	}
	if !fv.allows(kindNumber) && !(fv.allows(kindInteger) && v.num.isInt()) {
		return false
	}
	for _, b := range fv.bounds {
		if b.ok&(1<<(v.num.cmp(&b.limit)+1)) == 0 {
			return false
		}
	}
	return fv.inOneOfs(&v)
}

// allows reports whether the type keyword admits kind k (an integral
// number is checked by the caller).
func (fv *fastValue) allows(k jsonKind) bool { return fv.types == 0 || fv.types&k != 0 }

// inOneOfs reports whether v equals a member of every enum and const.
func (fv *fastValue) inOneOfs(v *scalar) bool {
	for _, members := range fv.oneOfs {
		found := false
		for i := range members {
			if members[i].equal(v) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (a *scalar) equal(b *scalar) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindBoolean:
		return a.b == b.b
	case kindString:
		return a.s == string(b.str) // no allocation: a comparison
	case kindNumber:
		return a.num.cmp(&b.num) == 0
	}
	return true // null
}
