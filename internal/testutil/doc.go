// Package testutil holds helpers shared by the project's tests: waiting
// for a condition, building binaries, nats-servers with operator auth,
// processes and golden files.
//
// Only tests import it. A whole mesh for a test is package meshtest's and
// a handler test without NATS worker/workertest's: those are public, for
// users' tests too.
package testutil
