// Command meshtest hosts one tool, words.count, and tests it with package
// meshtest: main_test.go starts a whole mesh inside `go test` (a NATS
// server, a worker and a caller, in-process, stopped when the test ends),
// registers the tool the way main does, and calls it as any caller would.
//
//	go test ./examples/meshtest          # the test: no server needed
//	go run ./examples/meshtest           # the worker, against a running mesh
package main
