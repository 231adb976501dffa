//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"time"
)

// Zygote starts a Plan's programs; outside Linux there are no Plans to
// start (Support.Check refuses every sandbox).
type Zygote struct{}

// Run is a program a Zygote started.
type Run struct {
	// Pid is the program's pid and process group.
	Pid int
}

// DefaultZygoteIdle is how long a Zygote's process is kept without a
// program before it is retired.
const DefaultZygoteIdle = time.Minute

// NewZygote returns a Zygote that starts nothing outside Linux.
func NewZygote(*Plan, time.Duration, time.Duration) *Zygote { return &Zygote{} }

// Start fails outside Linux.
func (z *Zygote) Start(_, _ []string, _, _, _ *os.File) (*Run, error) {
	return nil, errors.New("sandboxes need Linux (Landlock, user namespaces)")
}

// Wait fails outside Linux.
func (r *Run) Wait() (*Exit, error) { return nil, errors.New("sandboxes need Linux") }

// Close does nothing outside Linux.
func (z *Zygote) Close() error { return nil }
