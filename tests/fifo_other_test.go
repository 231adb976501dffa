//go:build !unix

package tests

import "errors"

// mkfifo is unsupported here.
func mkfifo(string) error { return errors.New("no named pipes on this system") }
