package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

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
