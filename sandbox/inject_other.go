//go:build linux && !amd64 && !arm64

package sandbox

import (
	"errors"
	"syscall"
)

// canInject says confineInto works on this architecture: not here, so the
// zygote confines a thread per call and forks from it, and its children
// unshare their user namespace themselves (at the cost of a full fork
// rather than a vfork).
const canInject = false

func confineInto(int, int, *[]syscall.Signal) error {
	return errors.New("confineInto: not on this architecture")
}
