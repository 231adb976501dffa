// Package apisurface holds the test that pins the exported surface of
// every public package of the module in a golden file (testdata/*.api), so
// that growing or changing the API that a 1.0 release freezes is a
// reviewed diff. Regenerate with:
//
//	go test ./internal/apisurface -update
package apisurface
