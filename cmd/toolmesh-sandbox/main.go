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
