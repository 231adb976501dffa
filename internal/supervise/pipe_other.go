//go:build !linux

package supervise

import "os"

// OutputPipe is a pipe for a program's output: the parent reads r, the
// program gets w.
func OutputPipe() (r, w *os.File, err error) { return os.Pipe() }

// InputPipe is a pipe for a program's input: the program gets r, the
// parent writes w.
func InputPipe() (r, w *os.File, err error) { return os.Pipe() }
