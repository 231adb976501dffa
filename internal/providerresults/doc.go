// Package providerresults turns the events of a model's tool calls into
// the provider's tool-result messages: an Accumulator gathers one call's
// events into its provider.Outcome, Item renders an outcome as the
// provider's result element and Messages wraps the elements into the
// messages a conversation carries (docs/providers.md, "Results out").
// caller.Dispatch is its user; the shapes are pinned by the goldens under
// envelope/provider/testdata (results_*.json).
package providerresults
