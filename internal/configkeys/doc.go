// Package configkeys checks the keys of a configuration document against
// what each place in it may hold, so that a misspelt or misplaced key is
// an error naming the key and the nearest valid one, never a setting
// silently ignored (a sandbox block one level too deep would otherwise
// leave a program unconfined).
//
// It holds the keys the tools file allows (ToolsFile, Sandbox, CLIBinding,
// MCPBinding), not the file's loading or meaning: that is worker/cli's and
// internal/mcp/bridge's. It imports the public envelope package for one
// type: a tools file's annotations are envelope.Annotations, whose JSON
// keys it checks.
package configkeys
