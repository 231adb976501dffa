// Command toolmesh-sandbox is the sandbox helper a worker starts in front
// of every confined program: it confines itself (Landlock, resource
// limits) and execs the program. It is kept apart from the toolmesh
// binary because it starts for every call, and a small binary starts
// several times faster than the whole command; the toolmesh binary serves
// as its own helper when this one is absent. See package sandbox.
package main

import (
	"fmt"
	"os"

	"github.com/toolmesh/toolmesh/internal/sandbox"
)

func main() {
	sandbox.Main()
	fmt.Fprintln(os.Stderr, "toolmesh-sandbox is started by a toolmesh worker in front of a confined program; it takes no commands of its own")
	os.Exit(2)
}
