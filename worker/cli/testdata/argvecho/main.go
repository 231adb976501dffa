// argvecho prints its argv (without the program name) and selected
// environment variables and what it read on stdin as JSON, so tests can check exactly what a bound
// program received.
package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
)

func main() {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	stdin, _ := io.ReadAll(os.Stdin)
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"argv": os.Args[1:], "env": env, "stdin": string(stdin)})
}
