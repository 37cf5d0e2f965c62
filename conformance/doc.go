// Package conformance is the op conformance table, in the manner of
// PyTorch's OpInfo: sample calls for every op in the registry (eager.Ops),
// and the checks each op's samples run, for tests: Run runs them all. Its
// own test runs them over the CPU devices and a device of a kind of its
// own (sim_test.go); a backend's test registers its device and calls Run,
// and nothing else changes to cover it.
//
// A sample is a call of the public API; the table captures the op's first
// call in it (its attributes and inputs) and then checks, for every sample:
//   - the op runs, writes every element of the outputs Infer declared (two
//     runs over differently poisoned buffers agree) and leaves its inputs
//     unchanged;
//   - every registered device (device.Devices) runs it and agrees with
//     the CPU reference on cpu:0: another CPU device (cpu:1) bit for bit,
//     a device of another kind within the dtype's tolerance
//     (approx.Tolerance); sim_test.go registers such a device, with the
//     CPU's kernels under a kind of its own, as a backend would;
//   - traced equals eager (a Function of the call, two calls);
//   - the gradients of differentiable ops agree with central finite
//     differences in float64, and, where the rule is differentiable in
//     turn, so do the gradients of the gradients;
//   - bad inputs (an extra input, a nil input, a dtype the op does not
//     declare, and the op's own bad samples) give typed errors and change
//     no input.
//
// An op without samples fails the test: a new op is covered by adding its
// samples (table.go), a new device by registering it.
package conformance
