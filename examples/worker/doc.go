// Command worker is a toolmesh worker written in Go: it hosts two typed
// tools on a NATS server and serves them until it is interrupted.
//
//	go run ./cmd/toolmesh dev                       # a mesh on nats://127.0.0.1:4222
//	go run ./examples/worker                        # this worker joins it
//	go run ./cmd/toolmesh call greet --args '{"name":"Ada"}'
//
// The server comes from -server, else $NATS_URL, else nats://127.0.0.1:4222.
// It is the hosting side only: examples/caller calls its tools, and
// command-line tools are hosted from a tools file instead
// (examples/cli-tools).
package main
