package attnmask

import "testing"

func TestOf(t *testing.T) {
	batch := []int{2, 3}
	for _, c := range []struct {
		m    []int
		want Layout
		ok   bool
	}{
		{[]int{4, 5}, Layout{Rep: 6, Step: 20, Row: 5}, true},       // one for all
		{[]int{1, 5}, Layout{Rep: 6, Step: 5, Row: 0}, true},        // one row of keys for all
		{[]int{2, 3, 4, 5}, Layout{Rep: 1, Step: 20, Row: 5}, true}, // one each
		{[]int{2, 1, 4, 5}, Layout{Rep: 3, Step: 20, Row: 5}, true}, // per sequence, the heads share
		{[]int{2, 1, 1, 5}, Layout{Rep: 3, Step: 5, Row: 0}, true},  // key padding
		{[]int{1, 1, 1, 5}, Layout{Rep: 6, Step: 5, Row: 0}, true},  // all, written with the batch's rank
		{[]int{2, 3, 1, 5}, Layout{Rep: 1, Step: 5, Row: 0}, true},  // a row of keys each
		{[]int{1, 3, 4, 5}, Layout{}, false},                        // the 1s not a suffix
		{[]int{3, 4, 5}, Layout{}, false},                           // another rank
		{[]int{2, 3, 4, 6}, Layout{}, false},                        // other keys
		{[]int{2, 3, 2, 5}, Layout{}, false},                        // other queries
		{[]int{5}, Layout{}, false},                                 // a vector
	} {
		got, ok := Of(batch, 4, 5, c.m)
		if ok != c.ok || got != c.want {
			t.Errorf("mask %v: %+v %v, want %+v %v", c.m, got, ok, c.want, c.ok)
		}
	}
	if got, ok := Of(nil, 4, 5, []int{4, 5}); !ok || got != (Layout{Rep: 1, Step: 20, Row: 5}) {
		t.Errorf("no batch: %+v %v", got, ok)
	}
}
