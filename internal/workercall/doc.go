// Package workercall is what a worker tells the module's own packages of
// its calls beyond worker.Request. Of a live call (Call): whether its
// caller answers questions, whom it counts against when something scarce
// is shared, and whether it may wait for room. The MCP bridge declares
// its client capabilities by the first; worker/cli's slots are shared and
// waited for by the other two. The worker puts the call in the context it
// hands the handler (and a handler's Admit method), under Key. Of an
// answer that settled a call's question (Answered): what the audit trail
// records of it (workermw.AuditAnswers, set as worker.Config.OnAnswer).
// It sits under internal/ because only the module's own packages read
// it: a program's handler has no slots shared by the worker's rules to
// keep, and a program audits answers through workermw. Of a handler
// (Family): that it serves a family of tool names, as the task service's
// submit.<tool> does, so that the server's permissions gate each name.
package workercall
