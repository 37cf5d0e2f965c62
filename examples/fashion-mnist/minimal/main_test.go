package main

import (
	"os"
	"testing"
)

// The minimal program learns on a slice of the data: 3000 images (250
// validate), one epoch, tested on 500.
func TestMinimalLearns(t *testing.T) {
	dir := "/usr/share/datasets/fashion-mnist"
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("EAGERFLOW_REQUIRE_TORCH") != "" {
			t.Fatalf("%v: scripts/install-test-deps installs dataset-fashion-mnist", err)
		}
		t.Skipf("%v: install Debian's dataset-fashion-mnist (scripts/install-test-deps does)", err)
	}
	acc, err := train(dir, 3000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.6 {
		t.Errorf("test accuracy %.3f after one epoch on 3000 images", acc)
	}
}
