// Command toolmesh-sandbox is the sandbox helper a worker starts in front
// of every confined program: it confines itself (Landlock, resource
// limits) and execs the program. It is kept apart from the toolmesh
// binary because it starts for every call, and a small binary starts
// several times faster than the whole command; the toolmesh binary serves
// as its own helper when this one is absent.
//
// It holds only main: the confinement is package internal/sandbox's
// (sandbox.Main), and the policy comes from the worker that starts it.
package main
