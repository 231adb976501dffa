package provider

import "github.com/toolmesh/toolmesh/envelope"

// Providers lists every provider, for the results golden (an external
// test, as it uses internal/providerresults, which imports this package).
var Providers = providers

// BadArgs is the Problem ParseCalls gives a call whose arguments are
// unusable, for the results golden's bad-args fixture.
func BadArgs(id, name, msg string) *envelope.Problem {
	return badArgs(rawCall{id: id, name: name}, msg)
}
