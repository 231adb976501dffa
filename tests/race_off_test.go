//go:build !race

package tests

// raceEnabled scales the heaviest tests down under the race detector.
const raceEnabled = false
