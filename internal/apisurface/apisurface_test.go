package apisurface

import (
	"flag"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const module = "github.com/toolmesh/toolmesh"

// TestExportedSurface renders every public package's exported declarations
// (signatures, types with their exported fields, constants and variables;
// no doc comments, so rewording a comment changes nothing) and compares
// them with testdata/<path>.api. A package without a golden file, or a
// golden file without its package, fails too: a new public package is a
// reviewed decision as well.
func TestExportedSurface(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs := publicPackages(t, root)
	if len(dirs) < 10 {
		t.Fatalf("found only %d public packages under %s: %v", len(dirs), root, dirs)
	}
	want := map[string]bool{}
	for _, rel := range dirs {
		name := goldenName(rel)
		want[name] = true
		t.Run(rel, func(t *testing.T) {
			got := surface(t, filepath.Join(root, rel), module+"/"+rel)
			checkGolden(t, filepath.Join("testdata", name), got)
		})
	}
	stale, _ := filepath.Glob(filepath.Join("testdata", "*.api"))
	for _, p := range stale {
		if !want[filepath.Base(p)] {
			if *update {
				_ = os.Remove(p)
				continue
			}
			t.Errorf("%s pins a package that is no longer public; remove it (or run with -update)", p)
		}
	}
}

// publicPackages lists the module's importable library packages, relative
// to root: every directory with Go files for linux/amd64 that is not a
// command, not internal, not test-only and not a separate module.
func publicPackages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && skipDir(root, rel, d.Name()) {
			return filepath.SkipDir
		}
		if p, err := buildContext().ImportDir(path, 0); err == nil && p.Name != "main" && len(p.GoFiles) > 0 {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// skipDir reports the directories that hold no public package: internal
// ones, commands, test suites, fixtures, dot and underscore directories,
// node_modules and nested modules.
func skipDir(root, rel, name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	switch name {
	case "internal", "testdata", "node_modules", "cmd", "tests":
		return true
	}
	_, err := os.Stat(filepath.Join(root, rel, "go.mod"))
	return err == nil
}

// buildContext fixes the platform, so the surface does not depend on the
// machine that runs the test.
func buildContext() *build.Context {
	c := build.Default
	c.GOOS, c.GOARCH = "linux", "amd64"
	return &c
}

// goldenName is the golden file of a package: its path with / as _.
func goldenName(rel string) string {
	if rel == "." {
		return "toolmesh.api"
	}
	return strings.ReplaceAll(rel, "/", "_") + ".api"
}
