// Package report turns a sandbox's refusals and policies into the mesh's
// shapes: a denial into its registry Problem, a policy into the summary a
// tool's spec shows. It is apart from package sandbox so that the sandbox
// helper, which starts in front of every confined program, does not load
// envelope.
//
// It imports the public envelope package because those shapes are
// envelope's: a denial becomes an envelope.Problem (sandbox_read_denied,
// sandbox_limit…) and a summary an envelope.SandboxSummary. Confining and
// classifying a program's end are package sandbox's.
package report
