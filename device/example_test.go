package device_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/device"
)

// The devices a program has, looked up by name; the default is where new
// tensors go.
func Example() {
	cpu, err := device.Lookup("cpu:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cpu.Name(), cpu.Kind(), device.Default() == cpu)

	// Buffers come from the device and go back to its cache.
	buf, err := cpu.Alloc(1024)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(buf.Size(), buf.Device().Name())
	cpu.Free(buf)

	_, err = device.Lookup("tpu:3")
	fmt.Println(err)
	// Output:
	// cpu:0 cpu true
	// 1024 cpu:0
	// device: unknown device "tpu:3" (registered: cpu:0, cpu:1)
}
