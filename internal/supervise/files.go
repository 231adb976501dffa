package supervise

import "os"

// CloseAll closes files, ignoring errors: the pipes of a program being
// started or abandoned, whose close can fail only in ways nobody can act on.
func CloseAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
