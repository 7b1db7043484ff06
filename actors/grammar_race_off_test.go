//go:build !race

package actors_test

// raceEnabled: see grammar_race_on_test.go.
const raceEnabled = false
