//go:build race

package tests

// raceEnabled scales the heaviest tests down under the race detector,
// which slows every memory access several times over.
const raceEnabled = true
