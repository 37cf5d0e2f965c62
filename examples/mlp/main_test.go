package main

import "testing"

func TestMLPLearnsTheSpirals(t *testing.T) {
	cfg := config{epochs: 40, points: 600}
	if testing.Short() {
		cfg = config{epochs: 10, points: 300}
	}
	res, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := res.firstLoss / 2 // the full run halves the loss at least
	if testing.Short() {
		want = res.firstLoss * 0.85 // a short run must still fall clearly
	}
	if !(res.loss < want) {
		t.Errorf("loss went from %.4f to %.4f", res.firstLoss, res.loss)
	}
	if !testing.Short() && res.accuracy < 0.9 {
		t.Errorf("accuracy %.2f after %d epochs", res.accuracy, cfg.epochs)
	}
}
