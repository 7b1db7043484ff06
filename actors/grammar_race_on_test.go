//go:build race

package actors_test

// raceEnabled: the race detector makes the model ~5x slower; the corpus
// tests run a spread quarter of their grammars under it.
const raceEnabled = true
