// Command caller calls the tools of examples/worker: greet once, count as
// a stream whose events it prints as they arrive, and greet with bad
// arguments, to show the Problem a failed call returns.
//
//	go run ./cmd/toolmesh dev &
//	go run ./examples/worker &
//	go run ./examples/caller
//
// The server comes from -server, else $NATS_URL, else nats://127.0.0.1:4222.
// It is the calling side only: the tools are examples/worker's.
package main
