package collective

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/eagerflow/eagerflow/device"
)

// Devices of other processes, for functions whose ops are placed on the
// ranks of a Rendezvous (trace.Function.Partitions with RankOf): in a
// traced function, x.To(collective.RankCPU(r)) puts what follows on rank
// r's CPU. While a function is traced every process runs all of it, so a
// rank device is a CPU device of this process too ("rank:1/cpu:0", host
// memory); once traced, each process runs only the partitions RankOf
// gives it, and the values that cross between ranks go through the
// Rendezvous.

var rankDevices struct {
	mu   sync.Mutex
	byID map[int]*device.CPUDevice
	// assigned are AssignRank's devices, by device.
	assigned map[device.Device]int
}

// RankCPU returns the device that stands for rank r's CPU ("rank:r/cpu:0"),
// the same one on every call. r must not be negative.
func RankCPU(r int) device.Device {
	if r < 0 {
		panic(fmt.Sprintf("collective: RankCPU(%d): a rank is not negative", r))
	}
	rankDevices.mu.Lock()
	defer rankDevices.mu.Unlock()
	if rankDevices.byID == nil {
		rankDevices.byID = map[int]*device.CPUDevice{}
	}
	d, ok := rankDevices.byID[r]
	if !ok {
		d = device.NewHostDevice(fmt.Sprintf("rank:%d/cpu:0", r), device.CPU)
		rankDevices.byID[r] = d
	}
	return d
}

// AssignRank makes d stand for a device of rank r (RankOf gives r for
// it), as RankCPU's stand for their ranks' CPUs: a GPU of this process
// opened under the other rank's name, cuda.OpenAs(0, "rank:1/gpu:0"),
// computes rank 1's part of a placed function while every process traces
// it, and rank 1 runs that part on its own GPU of that name. Every process
// assigns the same devices. Errors: a nil device, a negative rank, a
// device assigned to another rank already, and the host (rank 0's own).
func AssignRank(d device.Device, r int) error {
	switch {
	case d == nil:
		return fmt.Errorf("collective: AssignRank: the device is nil")
	case r < 0:
		return fmt.Errorf("collective: AssignRank(%s, %d): a rank is not negative", d.Name(), r)
	case d == device.Device(device.Host()):
		return fmt.Errorf("collective: AssignRank(%s, %d): the host is every process's own", d.Name(), r)
	}
	rankDevices.mu.Lock()
	defer rankDevices.mu.Unlock()
	if was, ok := rankDevices.assigned[d]; ok && was != r {
		return fmt.Errorf("collective: AssignRank(%s, %d): it stands for rank %d already", d.Name(), r, was)
	}
	if rankDevices.assigned == nil {
		rankDevices.assigned = map[device.Device]int{}
	}
	rankDevices.assigned[d] = r
	return nil
}

// RankOf is the rank a device belongs to: r for RankCPU(r) and for the
// devices AssignRank gave r, 0 for every other device (the process of
// rank 0 runs what stays on its own devices: a function's arguments and
// results there). It is graph.PartitionOptions.RankOf for a function
// placed on ranks.
func RankOf(d device.Device) int {
	if d == nil {
		return 0
	}
	rankDevices.mu.Lock()
	r, ok := rankDevices.assigned[d]
	rankDevices.mu.Unlock()
	if ok {
		return r
	}
	name, ok := strings.CutPrefix(d.Name(), "rank:")
	if !ok {
		return 0
	}
	r, err := strconv.Atoi(strings.TrimSuffix(name, "/cpu:0"))
	if err != nil || RankCPU(r) != d {
		return 0
	}
	return r
}
