// Package sandbox confines the programs a worker runs for its tools
// (CLI-bound programs and bridged stdio MCP servers) with what the Linux
// kernel offers without root or a container runtime: namespaces, a view of
// the filesystem that holds only the grants, Landlock for the filesystem
// and TCP, no_new_privs and resource limits.
//
// A Policy is a tools file's `sandbox` block. Prepare resolves it for one
// program (its executable, interpreter and libraries become readable) into
// a Plan. Plan.Command starts the program under the sandbox helper (a
// small binary, toolmesh-sandbox, or any program whose main calls Main
// first) as the init of its own user, PID, mount and IPC namespaces (and
// network namespace for network "none"): the helper builds the view,
// starts itself again in a nested user namespace that applies Landlock,
// no_new_privs and the limits and execs the program, reaps everything the
// program starts, and reports its end. Everything the program starts ends
// with it, and with the worker. A bridged server is started the same way
// (Plan.Argv). The worker itself is never confined. Classify reads a
// confined program's end (its signal, its exit, its stderr) and says which
// rule or limit stopped it.
//
// It does not read the tools file (worker/cli and the bridge do) and
// imports no public package: a denial's Problem and a policy's summary in
// a spec are internal/sandbox/report's, so the helper never loads
// envelope.
package sandbox
