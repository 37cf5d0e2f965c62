package collective

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
)

// RankOf gives the rank of RankCPU's devices and of those AssignRank
// assigned, 0 for the rest; AssignRank refuses a negative rank, the host
// and a device of another rank already, and takes the same assignment
// again.
func TestAssignRank(t *testing.T) {
	gpu := device.NewHostDevice("rank:2/test:0", device.GPU) // a stand-in's stand-in
	if r := RankOf(gpu); r != 0 {
		t.Errorf("before AssignRank: rank %d, want 0", r)
	}
	for _, again := range []bool{false, true} {
		if err := AssignRank(gpu, 2); err != nil {
			t.Fatalf("again=%v: %v", again, err)
		}
	}
	for d, want := range map[device.Device]int{gpu: 2, RankCPU(3): 3, device.Host(): 0, device.SecondCPU(): 0} {
		if r := RankOf(d); r != want {
			t.Errorf("RankOf(%s) = %d, want %d", d.Name(), r, want)
		}
	}
	for _, c := range []struct {
		d    device.Device
		r    int
		want string
	}{
		{gpu, 1, "stands for rank 2 already"},
		{device.NewHostDevice("rank:x", device.CPU), -1, "not negative"},
		{device.Host(), 1, "every process's own"},
	} {
		if err := AssignRank(c.d, c.r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("AssignRank(%s, %d): %v, want %q", c.d.Name(), c.r, err, c.want)
		}
	}
}
