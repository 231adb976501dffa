//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// Command is one run of a Plan's program; outside Linux there are no
// Plans to run (Support.Check refuses every sandbox).
type Command struct {
	// Cmd is the helper's command.
	Cmd *exec.Cmd
}

// Command fails outside Linux.
func (pl *Plan) Command(_, _ []string) (*Command, error) {
	return nil, errors.New("sandboxes need Linux (Landlock, namespaces)")
}

// Started does nothing outside Linux.
func (c *Command) Started() {}

// Close does nothing outside Linux.
func (c *Command) Close() {}

// Wait fails outside Linux.
func (c *Command) Wait() (*Exit, error) { return nil, errors.New("sandboxes need Linux") }
