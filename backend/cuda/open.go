package cuda

import (
	"fmt"
	"os"
	"sync"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/libcuda"
	"github.com/eagerflow/eagerflow/device"
)

// EnvDriver chooses the driver Open uses: unset or "nvidia" loads NVIDIA's
// libraries (libcuda.so.1, cuBLAS); "emulator" runs the kernels in the PTX
// emulator on the host, slowly, for tests on machines without a GPU.
const EnvDriver = "EAGERFLOW_CUDA_DRIVER"

var opened struct {
	sync.Mutex
	drv  cu.Driver
	err  error
	done bool
	devs map[int]*Device
	as   map[string]*Device // OpenAs's, by name
}

// driver loads the driver EnvDriver names, once.
func driver() (cu.Driver, error) {
	if !opened.done {
		opened.done = true
		switch v := os.Getenv(EnvDriver); v {
		case "", "nvidia":
			opened.drv, opened.err = libcuda.Load()
			if opened.err != nil {
				opened.err = fmt.Errorf("%w (without a GPU, %s=emulator runs the same kernels on the host, slowly)", opened.err, EnvDriver)
			}
		case "emulator":
			opened.drv = emu.New(emu.DefaultConfig)
		default:
			opened.err = fmt.Errorf("cuda: %s=%q: want nvidia or emulator", EnvDriver, v)
		}
	}
	return opened.drv, opened.err
}

// Count is the number of GPUs the driver sees; an error says why there is
// no driver (no libcuda.so.1 on this machine, another platform).
func Count() (int, error) {
	opened.Lock()
	defer opened.Unlock()
	drv, err := driver()
	if err != nil {
		return 0, err
	}
	return drv.DeviceCount()
}

// Open returns gpu:<ordinal>, opening it on first use (the driver is
// loaded then, never at init) and registering it with device.Register so
// that device.Lookup finds it by name. Errors: no driver (the libraries
// tried, and where), an ordinal the driver does not have, a failure of
// the driver (its CUDA error name and the call).
func Open(ordinal int) (*Device, error) {
	opened.Lock()
	defer opened.Unlock()
	if d, ok := opened.devs[ordinal]; ok {
		return d, nil
	}
	drv, err := driver()
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: gpu:%d: the driver (%s) sees %d GPU(s)", device.ErrUnknownDevice, ordinal, drv.Name(), n)
	}
	d, err := open(drv, ordinal)
	if err != nil {
		return nil, err
	}
	if opened.devs == nil {
		opened.devs = map[int]*Device{}
	}
	opened.devs[ordinal] = d
	device.Register(d)
	return d, nil
}

// OpenAs returns a device on GPU ordinal under another name, opening it
// on first use (the same one for every later call with that name) and
// registering it with device.Register: a device of its own (its stream,
// buffers and kernels) on the same GPU, which placement takes for another
// device. It stands for another process's GPU in a function placed on
// ranks ("rank:1/gpu:0", with collective.AssignRank): while such a
// function is traced every process runs all of it, this GPU computing
// the other rank's part; once traced, each process runs its own part,
// rank 1 on its own GPU under that name. Copies between it and gpu:ordinal
// go through the host. Errors: Open's, and a name that is empty or of the
// form gpu:N.
func OpenAs(ordinal int, name string) (*Device, error) {
	var n int
	if name == "" {
		return nil, fmt.Errorf("cuda: OpenAs(%d, %q): the name is empty", ordinal, name)
	}
	if _, err := fmt.Sscanf(name, "gpu:%d", &n); err == nil {
		return nil, fmt.Errorf("cuda: OpenAs(%d, %q): gpu:N names Open's devices", ordinal, name)
	}
	if _, err := Open(ordinal); err != nil {
		return nil, err
	}
	opened.Lock()
	defer opened.Unlock()
	if d, ok := opened.as[name]; ok {
		if d.ordinal != ordinal {
			return nil, fmt.Errorf("cuda: OpenAs(%d, %q): the name is gpu:%d's already", ordinal, name, d.ordinal)
		}
		return d, nil
	}
	d, err := open(opened.drv, ordinal)
	if err != nil {
		return nil, err
	}
	d.name = name
	if opened.as == nil {
		opened.as = map[string]*Device{}
	}
	opened.as[name] = d
	device.Register(d)
	return d, nil
}
