//go:build race

package tape_test

// raceEnabled: the race detector's build, where sync.Pool drops items at
// random and allocation counts mean little.
const raceEnabled = true
