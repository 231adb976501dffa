//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"syscall"
)

// Support is what this host offers a sandbox: nothing outside Linux.
type Support struct {
	ABI     int
	Helper  string
	Problem string
}

// Probe reports that sandboxes need Linux.
func Probe(context.Context) Support {
	return Support{Problem: "sandboxes need Linux (Landlock, user namespaces)"}
}

// ProbeHelpers reports that sandboxes need Linux.
func ProbeHelpers(ctx context.Context, _ []string) Support { return Probe(ctx) }

// Check always fails outside Linux.
func (s Support) Check(*Policy) error { return errors.New(s.Problem) }

// SysProcAttr is empty outside Linux.
func (pl *Plan) SysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// Main returns at once outside Linux.
func Main() {}
