//go:build !race

package tape_test

const raceEnabled = false
