package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/toolmesh/toolmesh/cmd/toolmesh/internal/usage"
)

// newVersionCmd is `toolmesh version`: what --version prints.
func newVersionCmd(g *globals) *cobra.Command {
	return usage.Command("version", "Print the version, commit and Go version of this binary",
		func(*cobra.Command) error {
			fmt.Fprintf(g.stdout, "toolmesh version %s\n", buildVersion())
			return nil
		})
}

// moduleVersion is the short version MCP clients see as serverInfo.version:
// the module version, and for a build from a checkout ((devel)) the
// commit's first 12 digits, e.g. "(devel)+3dac710e4f12".
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && v == "(devel)" {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

// buildVersion describes this binary from the build information Go embeds:
// the module version ((devel) for a local build), the VCS commit with a
// mark when the tree was modified, and the Go version and platform.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("unknown (no build info) %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	commit, modified, when := "unknown", "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		case "vcs.time":
			when = " " + s.Value
		}
	}
	return fmt.Sprintf("%s commit %s%s%s %s %s/%s", bi.Main.Version, commit, modified, when, bi.GoVersion, runtime.GOOS, runtime.GOARCH)
}
