//go:build !linux

package sandbox

// denyPtraceIfAsked does nothing outside Linux, where no sandbox runs.
func denyPtraceIfAsked() {}
