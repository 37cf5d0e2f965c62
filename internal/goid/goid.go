// Package goid tells goroutines apart, for the few checks that must know
// which goroutine calls them (a CUDA capture's, a trace's); what a
// computation does never depends on it.
package goid

import "runtime"

// Current returns the calling goroutine's id, read from its stack's header
// ("goroutine 7 [running]:"). It costs a stack header's formatting (about
// a microsecond): call it only where a capture or a trace is in progress.
func Current() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	var id int64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}
