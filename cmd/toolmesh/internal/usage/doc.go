// Package usage holds the checks of a command line that every toolmesh
// command shares (NoArgs, OneArg, FlagValueProblem, and Command for the
// many commands that take no arguments), so the commands kept in packages
// of their own (the bench) refuse bad usage exactly as the main package's
// commands do.
//
// The registry's default fix for invalid_input points at the violations a
// schema check attaches. A usage error of the command has none, so it must
// never keep that fix: each Problem here carries its own. It imports the
// public envelope package because those refusals are envelope's Problems
// (invalid_input), the one shape every command's failure leaves in. The
// commands themselves are not here: they are cmd/toolmesh's and the
// bench's.
package usage
