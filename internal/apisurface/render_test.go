package apisurface

import (
	"bytes"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// surface renders the exported API of the package in dir as go/doc sees
// it: constants, variables, functions, then each type with its
// constructors and methods, all in go/doc's (sorted) order.
func surface(t *testing.T, dir, importPath string) []byte {
	t.Helper()
	fset := token.NewFileSet()
	pkg := parseDoc(t, fset, dir, importPath, 0) // no comments: rewording one changes no API
	r := renderer{fset: fset}
	r.line("package " + pkg.Name + " // import " + importPath)
	r.values(pkg.Consts)
	r.values(pkg.Vars)
	r.funcs(pkg.Funcs)
	for _, ty := range pkg.Types {
		r.node(ty.Decl)
		r.values(ty.Consts)
		r.values(ty.Vars)
		r.funcs(ty.Funcs)
		r.funcs(ty.Methods)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.buf.Bytes()
}

// parseDoc reads the package in dir (its linux/amd64 files, no tests) as
// go/doc sees it: exported declarations only, with comments when mode
// says parser.ParseComments.
func parseDoc(t *testing.T, fset *token.FileSet, dir, importPath string, mode parser.Mode) *doc.Package {
	t.Helper()
	bp, err := buildContext().ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, mode|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, importPath)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

// renderer prints declarations one after the other, a blank line apart.
type renderer struct {
	fset *token.FileSet
	buf  bytes.Buffer
	err  error
}

func (r *renderer) line(s string) { r.buf.WriteString(s + "\n") }

func (r *renderer) values(vs []*doc.Value) {
	for _, v := range vs {
		r.node(v.Decl)
	}
}

// funcs prints signatures only: no body, no doc comment.
func (r *renderer) funcs(fs []*doc.Func) {
	for _, f := range fs {
		d := *f.Decl
		d.Body, d.Doc = nil, nil
		r.node(&d)
	}
}

func (r *renderer) node(n ast.Node) {
	r.buf.WriteString("\n")
	cfg := printer.Config{Mode: printer.UseSpaces | printer.TabIndent, Tabwidth: 8}
	if err := cfg.Fprint(&r.buf, r.fset, n); err != nil && r.err == nil {
		r.err = err
	}
	r.buf.WriteString("\n")
}

// checkGolden compares got with the golden file, or rewrites it under
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: a new public package needs its surface pinned (go test ./internal/apisurface -update, then review the file)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the exported API changed; review the difference and run `go test ./internal/apisurface -update`\n%s", lineDiff(want, got))
	}
}

// lineDiff lists the lines only the golden file has (-) and the lines only
// the package has now (+), each in its file's order: enough to see what
// was added or removed without a diff library.
func lineDiff(want, got []byte) string {
	count := func(b []byte) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(string(b), "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var out strings.Builder
	only := func(b []byte, other map[string]int, mark string) {
		seen := map[string]int{}
		for _, l := range strings.Split(string(b), "\n") {
			seen[l]++
			if strings.TrimSpace(l) != "" && seen[l] > other[l] {
				out.WriteString(mark + l + "\n")
			}
		}
	}
	only(want, g, "- ")
	only(got, w, "+ ")
	return out.String()
}
