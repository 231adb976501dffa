package apisurface

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeProgramsCompile keeps the README's and the guides' Go
// programs true: every ```go block's code lines (blank lines, comment-only
// lines and "…" left out; each line compared with its indentation
// trimmed) must appear, in order, in one _test.go file of the module,
// where go vet and go test compile them (examples, most with // Output:).
// A line that drifts from the code fails here, naming the file and line.
func TestReadmeProgramsCompile(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(goBlocks(string(readme))) == 0 {
		t.Fatal("the README has no ```go block")
	}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := testFiles(t, root)
	for _, doc := range append([]string{filepath.Join(root, "README.md")}, guides...) {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		for _, b := range goBlocks(string(md)) {
			if best, at, missing := bestMatch(b.lines, files); missing != "" {
				t.Errorf("%s:%d: the Go block's line %q is not in any test file in order (closest: %s, after %d of %d lines); mirror the block in an example",
					name, b.start, missing, best, at, len(b.lines))
			}
		}
	}
}

type goBlock struct {
	start int // line of the opening fence
	lines []string
}

// goBlocks returns the code lines of every ```go block.
func goBlocks(md string) []goBlock {
	var out []goBlock
	var cur *goBlock
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```go":
			cur = &goBlock{start: i + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if l := codeLine(line); l != "" {
				cur.lines = append(cur.lines, l)
			}
		}
	}
	return out
}

// codeLine is a line as compared: trimmed, "" for what is not code.
func codeLine(line string) string {
	l := strings.TrimSpace(line)
	if l == "…" || strings.HasPrefix(l, "//") {
		return ""
	}
	return l
}

// testFiles reads every _test.go file of the module but this package's.
func testFiles(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || filepath.Base(filepath.Dir(path)) == "apisurface" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			out[path] = append(out[path], strings.TrimSpace(line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bestMatch finds a file holding all of want in order; otherwise it names
// the file that got furthest and the first line it lacks.
func bestMatch(want []string, files map[string][]string) (best string, at int, missing string) {
	at = -1
	for path, have := range files {
		n := 0
		for _, l := range have {
			if n < len(want) && l == want[n] {
				n++
			}
		}
		if n == len(want) {
			return path, n, ""
		}
		if n > at || (n == at && path < best) {
			best, at = path, n
		}
	}
	return best, at, want[at]
}
