package sandbox

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// libDirs are where the dynamic loader looks for libraries when a program
// names no run path (the Debian/Ubuntu multiarch layout first).
func libDirs() []string {
	return []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}
}

// programFiles lists the files a program needs to start: itself, the
// interpreter of a script (following `#!/usr/bin/env NAME` to NAME on
// PATH), and for an ELF program its loader and shared libraries,
// recursively, each with symbolic links resolved.
func programFiles(path string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	if err := addProgram(path, seen, &out, 0); err != nil {
		return nil, err
	}
	return out, nil
}

func addFile(path string, seen map[string]bool, out *[]string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	if seen[real] {
		return real, false
	}
	seen[real] = true
	*out = append(*out, real)
	if real != path && !seen[path] {
		// The name the loader asks for: the sandbox's view shows only
		// what is listed, so the links on the way must be listed too.
		seen[path] = true
		*out = append(*out, filepath.Clean(path))
	}
	return real, true
}

func addProgram(path string, seen map[string]bool, out *[]string, depth int) error {
	if depth > 4 {
		return fmt.Errorf("%s: too many nested interpreters", path)
	}
	real, fresh := addFile(path, seen, out)
	if real == "" {
		return fmt.Errorf("program %s: not found", path)
	}
	if !fresh {
		return nil
	}
	if interp, arg, ok := shebang(real); ok {
		if err := addProgram(interp, seen, out, depth+1); err != nil {
			return err
		}
		if filepath.Base(interp) == "env" && arg != "" {
			if p, err := exec.LookPath(arg); err == nil {
				return addProgram(p, seen, out, depth+1)
			}
		}
		return nil
	}
	return addELF(real, seen, out)
}

// shebang reads a script's #! line: the interpreter and, for env, the
// program it names.
func shebang(path string) (interp, arg string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 256).ReadString('\n')
	if err != nil && line == "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", "", false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", false
	}
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "-") {
			arg = f
			break
		}
	}
	return fields[0], arg, true
}

// addELF adds an ELF file's loader and libraries; a file that is not ELF
// (or is static) adds nothing.
func addELF(path string, seen map[string]bool, out *[]string) error {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				addFile(strings.TrimRight(string(b), "\x00"), seen, out)
			}
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil
	}
	dirs := runPath(f, path)
	for _, lib := range libs {
		for _, d := range append(dirs, libDirs()...) {
			cand := filepath.Join(d, lib)
			if _, err := os.Stat(cand); err == nil {
				if real, fresh := addFile(cand, seen, out); fresh {
					_ = addELF(real, seen, out)
				}
				break
			}
		}
	}
	return nil
}

// runPath is an ELF file's DT_RUNPATH or DT_RPATH, $ORIGIN expanded.
func runPath(f *elf.File, path string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(path))
				d = strings.ReplaceAll(d, "${ORIGIN}", filepath.Dir(path))
				if d != "" {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}
