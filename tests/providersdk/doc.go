// Package providersdk checks envelope/provider's output against the
// providers' official Go SDKs. It is its own module so the product module
// never depends on those SDKs; run it with `make test-sdk`.
package providersdk
