// Package problembase puts the registry's Problems under the base URI a
// worker, caller or catalogue is configured with (their ProblemBaseURI):
// envelope builds every Problem under https://toolmesh.dev/problems, and a
// Registry moves it under the operator's own documentation host. It
// imports envelope because what it handles is envelope's Problem.
//
// The codes and their defaults are internal/codes'; only the type URI's
// base changes here.
package problembase
