// Package codes is the one registry of problem codes: each code's slug,
// title, status, exit code, default fix and retry advice. Package envelope
// builds every Problem from it (envelope.NewProblem), the toolmesh command
// explains a code or type URI from it, and docs/problems holds one page per
// entry; the codes themselves are envelope's Code constants.
//
// It is internal because only the module reads the table; users see its
// entries in the Problems they get and in the published pages.
package codes
