// Package graph is the dataflow graph a traced function becomes
// (package trace), its optimisation passes and its executors.
//
// Graph holds op nodes and TensorFlow's control-flow primitives (Switch,
// Merge, Enter, Exit, NextIteration) with execution frames, and the stacks
// a loop's gradient keeps its values on (Stack, StackPush, StackPop).
// Execute runs a graph by the rules of "Implementation of Control Flow in
// TensorFlow": values carry a dead flag and a frame/iteration tag, Switch
// kills its untaken output, Merge forwards its live input, an op with a
// dead input emits dead outputs without running, Enter opens a child frame
// (constants are seen by every iteration), NextIteration moves to the next
// iteration, and Exit returns to the parent, held back while dead until
// the frame can do nothing more. The executor (executor.go,
// executor_parallel.go) holds each loop frame to its ParallelIterations
// active iterations and runs heavy op nodes that are ready together at
// once on the workers of the graph's CPU device. Graphs without
// control-flow primitives run as a straight-line plan (plan.go) that
// releases each intermediate after its last reader.
//
// Record records a run of a graph on a device that records its work (a
// GPU: a CUDA graph) and replays it with one launch: a straight-line
// graph by its plan; on a device that records loops (device.LoopCapturer),
// a graph of frames and Conds lowered to regions (record_regions.go,
// record_loops.go: each frame a loop the device repeats, each Cond a
// branch on the device's predicate) and its loop gradients' stacks kept
// on the device (record_stacks.go): as deep as the loops' bounds, or, for
// a loop without one, as the trace saw, a deeper run noticed on the
// device and recorded again (record_grow.go); a straight-line graph's
// checks (a trace's guards) run on the device, read after each replay
// (record_checks.go).
//
// Placement finds the device each node runs on; Partition cuts a graph
// that spans devices into one graph per device, joined by sends and
// receives tagged with their loop iterations, with a control loop in
// every partition a loop's body reaches (partition.go), and
// Partitioned.Execute runs them at once; PartitionWith spreads them over
// processes (each runs its own, the values crossing through an Exchange).
//
// Optimize prepares a traced graph: pruning (Prune keeps placeholders and
// Keep nodes, a trace's guards), dropping stacks nothing pops, computing
// repeated ops once (optimize.go) and fusing chains of float32 elementwise
// ops into one pass for the graph's device kind (fuse.go). String and
// WriteDOT show a graph.
//
// Each run of a graph has an executor of its own: goroutines may run one
// graph at once.
package graph
