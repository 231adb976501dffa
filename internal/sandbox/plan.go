package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// HelperName is the sandbox helper's file name: `make build` puts it
// beside the toolmesh binary, and it is looked for there first.
const HelperName = "toolmesh-sandbox"

// helperFlag is the helper's first argument: a program whose main calls
// Main first becomes the helper when started with it.
const helperFlag = "--toolmesh-sandbox"

// confineFlag follows the helper flag when the sandbox's init starts the
// helper again, inside the sandbox, to confine itself and exec the program.
const confineFlag = "--confine"

// launchFlag follows the helper flag when a worker starts the helper for
// a call: it starts the sandbox's init in new namespaces (launcher_linux.go).
const launchFlag = "--launch"

// RootRunsAs is the uid and gid a root worker's confined programs run
// as (nobody): the kernel exempts real root from RLIMIT_NPROC, so a
// process limit binds only a program that is not root.
const RootRunsAs = 65534

// Exit codes of the helper itself, before the program runs.
const (
	// ExitSetup: the sandbox could not be set up; the program never ran.
	ExitSetup = 125
	// ExitExecDenied: exec of the program was refused.
	ExitExecDenied = 126
)

// wireVersion is the version of what the worker and its helper say to
// each other: the spec in the helper's argv and the program's end it
// reports on its status descriptor. The helper states
// it in its probe answer, and a worker
// refuses a helper that states another (or none: a build from before the
// version was stated, which spoke version 1). Raise it with every change
// of that wire.
const wireVersion = 4

// stderrPrefix starts every line the helper itself writes.
const stderrPrefix = "toolmesh-sandbox: "

// devices are granted to every confined program: nothing can be learnt or
// harmed through them, and programs fail oddly without them.
func devicesRW() []string { return []string{"/dev/null", "/dev/zero", "/dev/full"} }

// devicesR are granted read-only, with the loader's cache.
func devicesR() []string { return []string{"/dev/random", "/dev/urandom", "/etc/ld.so.cache"} }

// spec is what the helper is told, as JSON in its argv: the program's
// grants already resolved.
type spec struct {
	// RX are read-and-execute grants, RW read-write ones.
	RX []string `json:"rx,omitempty"`
	RW []string `json:"rw,omitempty"`
	// NetHandled says TCP is restricted to Ports (none when empty).
	NetHandled bool     `json:"net,omitempty"`
	Ports      []uint16 `json:"ports,omitempty"`
	Limits     Limits   `json:"limits,omitempty"`
	// UID and GID are what the program runs as (the worker's, or
	// RootRunsAs for a root worker).
	UID int `json:"uid"`
	GID int `json:"gid"`
	// View lists what the view shows beyond the grants, which Landlock
	// does not grant: the helper's own files (a dynamically linked
	// helper needs its loader and libraries to start as the confiner).
	View []string `json:"view,omitempty"`
	// Status says the init reports the program's end on descriptor 3.
	Status bool `json:"status,omitempty"`
	// NewNet says the launcher starts init in a network namespace of its
	// own (network none).
	NewNet bool `json:"netns,omitempty"`
	// HelperEnv is 1 when the environment starts with helperEnv, which
	// the confiner drops before the exec.
	HelperEnv int `json:"henv,omitempty"`
}

// helperEnv starts the helpers' environment when the program's has no
// GOMAXPROCS of its own: a helper's Go runtime then starts no thread for a
// second processor it never uses, a few thread starts less per helper and
// three helpers a call.
const helperEnv = "GOMAXPROCS=1"

// Plan is a Policy resolved for one program: ready to start it confined.
type Plan struct {
	Policy  *Policy
	Program string // the program's absolute path
	// Auto lists what was granted without being asked: the program, its
	// interpreter and shared libraries, and a few harmless devices.
	Auto   []string
	helper string
	spec   string // the spec, as Argv passes it
	// statusSpec is the spec with Status set, as Command passes it;
	// statusSpecEnv the same when Command puts helperEnv first in the
	// environment.
	statusSpec, statusSpecEnv string
}

// Prepare resolves p for the program at path (absolute, as exec.LookPath
// returns it): the program, the interpreter of a script (#!), an ELF
// program's loader and libraries become readable and executable. helper is
// the helper's path (Support.Helper). Every granted path must exist.
func Prepare(p *Policy, path, helper string) (*Plan, error) {
	for _, list := range [][]string{p.Read, p.Write} {
		for _, g := range list {
			if _, err := os.Stat(g); err != nil {
				return nil, fmt.Errorf("sandbox: granted path %s: %v", g, err)
			}
		}
	}
	auto, err := programFiles(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %v", err)
	}
	s := spec{Limits: p.Limits}
	s.RX = append(append(append([]string(nil), auto...), devicesR()...), p.Read...)
	s.RW = append(append([]string(nil), devicesRW()...), p.Write...)
	if !p.Network.Any {
		s.NetHandled, s.Ports = true, p.Network.Ports
	}
	if helper != "" {
		if s.View, err = programFiles(helper); err != nil {
			return nil, fmt.Errorf("sandbox: helper: %v", err)
		}
	}
	s.UID, s.GID = os.Getuid(), os.Getgid()
	if s.UID == 0 {
		s.UID, s.GID = RootRunsAs, RootRunsAs
	}
	pl := &Plan{Policy: p, Program: path, Auto: auto, helper: helper}
	if err := pl.setSpecs(s); err != nil {
		return nil, err
	}
	return pl, nil
}

// setSpecs sets the plan's specs from s: as Argv passes it, and with
// Status and NewNet as Command passes it, with and without the helpers'
// own GOMAXPROCS.
func (pl *Plan) setSpecs(s spec) error {
	specs := [3]string{}
	for i := range specs {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		specs[i] = string(b)
		s.Status, s.NewNet, s.HelperEnv = true, pl.Policy.Network.None(), i
	}
	pl.spec, pl.statusSpec, pl.statusSpecEnv = specs[0], specs[1], specs[2]
	return nil
}

// Argv is the helper's argument vector that runs the program with args
// (the program's own argv[0] is its path).
func (pl *Plan) Argv(args []string) []string {
	return append([]string{pl.helper, helperFlag, pl.spec, pl.Program}, args...)
}

// Helper is the helper's path.
func (pl *Plan) Helper() string { return pl.helper }

// covered reports whether path lies beneath one of roots (or is one).
func covered(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// helperCandidates are where the helper is looked for, in order: beside
// the running program, on PATH, and the running program itself (which
// serves as the helper when its main calls Main first).
func helperCandidates() []string {
	var out []string
	self, err := os.Executable()
	if err == nil {
		out = append(out, filepath.Join(filepath.Dir(self), HelperName))
	}
	if dirs := os.Getenv("PATH"); dirs != "" {
		for _, d := range filepath.SplitList(dirs) {
			if d != "" {
				out = append(out, filepath.Join(d, HelperName))
			}
		}
	}
	if self != "" {
		out = append(out, self)
	}
	return out
}
