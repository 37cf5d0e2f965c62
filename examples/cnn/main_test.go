package main

import "testing"

func TestCNNLearnsTheShapes(t *testing.T) {
	cfg := config{epochs: 4, images: 1200}
	if testing.Short() {
		cfg = config{epochs: 2, images: 300}
	}
	res, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.loss < res.firstLoss*0.85) {
		t.Errorf("loss went from %.4f to %.4f", res.firstLoss, res.loss)
	}
	if !testing.Short() && res.accuracy < 0.85 {
		t.Errorf("held-out accuracy %.2f", res.accuracy)
	}
}
