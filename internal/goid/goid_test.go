package goid

import "testing"

// Goroutines have ids of their own, the same for every call on one.
func TestCurrentTellsGoroutinesApart(t *testing.T) {
	here := Current()
	if here <= 0 || Current() != here {
		t.Fatalf("this goroutine's id: %d, then %d", here, Current())
	}
	other := make(chan int64)
	go func() { other <- Current() }()
	if id := <-other; id <= 0 || id == here {
		t.Errorf("another goroutine's id %d (this one's %d)", id, here)
	}
}
