// Package conformance is the op conformance table, in the manner of
// PyTorch's OpInfo: its tests hold sample calls for every op in the
// registry (eager.Ops) and run each op's checks from them. It has no code
// outside its tests.
//
// A sample is a call of the public API; the table captures the op's first
// call in it (its attributes and inputs) and then checks, for every sample:
//   - the op runs, writes every element of the outputs Infer declared (two
//     runs over differently poisoned buffers agree) and leaves its inputs
//     unchanged;
//   - every registered device runs it (today cpu:0 and cpu:1) and agrees
//     with the CPU reference bit for bit (a device's tolerance per dtype
//     where its arithmetic differs);
//   - traced equals eager (a Function of the call, two calls);
//   - the gradients of differentiable ops agree with central finite
//     differences in float64, and, where the rule is differentiable in
//     turn, so do the gradients of the gradients;
//   - bad inputs (an extra input, a nil input, a dtype the op does not
//     declare, and the op's own bad samples) give typed errors and change
//     no input.
//
// An op without samples fails the test: a new op is covered by adding its
// samples, a new device by registering it.
package conformance
