//go:build linux || darwin

package mpi

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/tensor"
)

// The tests run this test binary again under Open MPI's mpirun and MPICH's
// mpiexec, 2 and 3 processes on loopback (internal/mpitest), each rank
// running TestRankCollectives.
func TestCollectivesUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankCollectives") })
	}
}

func TestCollectivesUnderMPICH(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.RunWith(t, mpitest.MPICH, np, "TestRankCollectives") })
	}
	// Without EAGERFLOW_MPI_LIB the ranks load MPICH's library from
	// Hydra's environment (issue 31: they loaded Open MPI's and ran as two
	// jobs of one process).
	t.Run("detected", func(t *testing.T) { mpitest.RunWith(t, mpitest.MPICHDetected, 2, "TestRankCollectives") })
}

// Hydra's job with Open MPI's library named: each rank fails, saying
// which library to name instead.
func TestWrongLibraryForTheLauncher(t *testing.T) {
	t.Setenv("EAGERFLOW_MPI_LIB", "libmpi.so.40")
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1") // Open MPI's singleton start, as root in a container
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	out, err := mpitest.StartWith(t, mpitest.MPICHDetected, 2, "TestRankWrongLibrary", 2*time.Minute)
	if err != nil || strings.Count(out, "--- PASS: TestRankWrongLibrary") != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestRankWrongLibrary(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestWrongLibraryForTheLauncher")
	}
	_, err := Open()
	if err == nil || !strings.Contains(err.Error(), "sees a world of 1") || !strings.Contains(err.Error(), "EAGERFLOW_MPI_LIB=libmpich.so.12") {
		t.Fatalf("Open under Hydra with Open MPI's library: %v", err)
	}
}

// TestRankCollectives is one rank's part: every collective on values each
// rank can predict, and the errors of bad arguments.
func TestRankCollectives(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestCollectivesUnderMPIRun's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, n := c.Rank(), c.Size()
	if n < 2 || r < 0 || r >= n {
		t.Fatalf("rank %d of %d", r, n)
	}
	// The library the launcher's job asked for is the one loaded.
	lib := "Open MPI"
	if os.Getenv("PMI_SIZE") != "" { // Hydra's job: MPICH, named or detected
		lib = "MPICH"
	}
	if !strings.Contains(c.Library(), lib) {
		t.Errorf("rank %d: library %q, want %s", r, c.Library(), lib)
	}
	mine := tensor.FromSlice([]float32{float32(r), float32(10 * r), 1, float32(-r)}, 2, 2)
	tri := float32(n * (n - 1) / 2) // 0 + 1 + ... + n-1

	sum, err := c.AllReduce(mine, collective.Sum)
	want(t, "AllReduce sum", sum, err, []float32{tri, 10 * tri, float32(n), -tri}, tensor.Shape{2, 2})
	mean, err := c.AllReduce(mine, collective.Mean)
	want(t, "AllReduce mean", mean, err, []float32{tri / float32(n), 10 * tri / float32(n), 1, -tri / float32(n)}, tensor.Shape{2, 2})
	mx, err := c.AllReduce(mine, collective.Max)
	want(t, "AllReduce max", mx, err, []float32{float32(n - 1), float32(10 * (n - 1)), 1, 0}, tensor.Shape{2, 2})
	mn, err := c.AllReduce(mine, collective.Min)
	want(t, "AllReduce min", mn, err, []float32{0, 0, 1, float32(-(n - 1))}, tensor.Shape{2, 2})
	if got := tensor.ToSlice[float32](mine); !slices.Equal(got, []float32{float32(r), float32(10 * r), 1, float32(-r)}) {
		t.Errorf("AllReduce changed its input: %v", got)
	}
	ints, err := c.AllReduce(tensor.FromSlice([]int64{int64(r), 1}), collective.Sum)
	if err != nil || !slices.Equal(tensor.ToSlice[int64](ints), []int64{int64(tri), int64(n)}) {
		t.Errorf("int64 AllReduce: %v, %v", ints, err)
	}

	b, err := c.Broadcast(tensor.FromSlice([]float64{float64(100 + r), 7}), 1)
	if err != nil || !slices.Equal(tensor.ToSlice[float64](b), []float64{101, 7}) {
		t.Errorf("Broadcast from 1: %v, %v", b, err)
	}
	g, err := c.AllGather(tensor.FromSlice([]int32{int32(r), int32(r * r)}))
	if err != nil || !g.Shape().Equal(tensor.Shape{n, 2}) {
		t.Fatalf("AllGather: %v, %v", g, err)
	}
	for k, v := range tensor.ToSlice[int32](g) {
		if rk := k / 2; k%2 == 0 && v != int32(rk) || k%2 == 1 && v != int32(rk*rk) {
			t.Errorf("AllGather element %d is %d: %v", k, v, g)
		}
	}
	rows := make([]float32, 2*n)
	for i := range rows {
		rows[i] = float32(i + r)
	}
	rs, err := c.ReduceScatter(tensor.FromSlice(rows, n, 2), collective.Sum)
	want(t, "ReduceScatter", rs, err, []float32{float32(n*2*r) + tri, float32(n*(2*r+1)) + tri}, tensor.Shape{1, 2})

	// A ring: each rank sends its rank to the next.
	next, prev := (r+1)%n, (r+n-1)%n
	if r%2 == 0 {
		err = c.Send(tensor.FromSlice([]int64{int64(r)}), next, 7)
		got, rerr := c.Recv(tensor.Zeros(tensor.Int64, 1), prev, 7)
		if err != nil || rerr != nil || tensor.ToSlice[int64](got)[0] != int64(prev) {
			t.Errorf("ring: %v %v %v", got, err, rerr)
		}
	} else {
		got, rerr := c.Recv(tensor.Zeros(tensor.Int64, 1), prev, 7)
		err = c.Send(tensor.FromSlice([]int64{int64(r)}), next, 7)
		if err != nil || rerr != nil || tensor.ToSlice[int64](got)[0] != int64(prev) {
			t.Errorf("ring: %v %v %v", got, err, rerr)
		}
	}
	if err := c.Barrier(); err != nil {
		t.Error(err)
	}

	// Bad arguments are errors naming the collective, before MPI is asked.
	for name, err := range map[string]error{
		"root":       second(c.Broadcast(mine, n)),
		"bool sum":   second(c.AllReduce(tensor.FromSlice([]bool{true}), collective.Sum)),
		"int mean":   second(c.AllReduce(tensor.FromSlice([]int32{1}), collective.Mean)),
		"scatter":    second(c.ReduceScatter(tensor.Zeros(tensor.Float32, n+1, 2), collective.Sum)),
		"send rank":  c.Send(mine, n, 0),
		"recv tag":   second(c.Recv(mine, 0, -1)),
		"nil tensor": second(c.AllReduce(nil, collective.Sum)),
	} {
		if !errors.Is(err, collective.ErrCollective) || !strings.Contains(err.Error(), fmt.Sprintf("rank %d", r)) {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func second(_ *tensor.Tensor, err error) error { return err }

func want(t *testing.T, what string, got *tensor.Tensor, err error, vals []float32, shape tensor.Shape) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if !got.Shape().Equal(shape) || !slices.Equal(tensor.ToSlice[float32](got), vals) {
		t.Errorf("%s: %v, want %v %v", what, got, vals, shape)
	}
}

// A rank that dies ends the job: the others, waiting in a collective for
// it, are stopped by the launcher instead of hanging, and the job fails
// saying so (Open MPI names the dead rank's exit status or signal; MPICH's
// hydra at most the survivors it then killed): an exit with a status, or
// SIGKILL, under both.
func TestDeadRankEndsTheJob(t *testing.T) {
	for _, l := range []mpitest.Launcher{mpitest.OpenMPI, mpitest.MPICH} {
		for _, how := range []string{"exit", "kill"} {
			t.Run(fmt.Sprint(l, "/", how), func(t *testing.T) {
				t.Setenv("EAGERFLOW_TEST_DEATH", how)
				start := time.Now()
				out, err := mpitest.StartWith(t, l, 3, "TestRankDies", 60*time.Second)
				if err == nil {
					t.Fatalf("the job succeeded with a dead rank:\n%s", out)
				}
				if strings.Contains(err.Error(), "still running") {
					t.Fatalf("the ranks hung for %v after one died:\n%s", time.Since(start), out)
				}
				want := []string{"Exit code:    3", "exit code 3", "non-zero status"}
				switch {
				case l == mpitest.MPICH:
					return // hydra fails the job; its report, when it prints one, names the survivors it killed
				case how == "kill":
					want = []string{"signal 9", "Killed"}
				}
				found := false
				for _, w := range want {
					found = found || strings.Contains(out, w)
				}
				if !found {
					t.Errorf("the launcher's report names none of %q:\n%s", want, out)
				}
			})
		}
	}
}

// TestRankDies: rank 1 exits with status 3 (or is killed, by
// EAGERFLOW_TEST_DEATH=kill) before the collective the others wait in.
func TestRankDies(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestDeadRankEndsTheJob's launcher")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if c.Rank() == 1 {
		if os.Getenv("EAGERFLOW_TEST_DEATH") == "kill" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		os.Exit(3)
	}
	_, err = c.AllReduce(tensor.FromSlice([]float32{1}), collective.Sum)
	t.Errorf("rank %d: AllReduce returned (%v) with rank 1 dead", c.Rank(), err)
}

// A rank that hangs does not hang the others: their call fails after the
// timeout with an error naming it, and the job ends; under Open MPI and
// MPICH.
func TestHungRankTimesOut(t *testing.T) {
	for _, l := range []mpitest.Launcher{mpitest.OpenMPI, mpitest.MPICH} {
		t.Run(fmt.Sprint(l), func(t *testing.T) { hungRank(t, l) })
	}
}

func hungRank(t *testing.T, l mpitest.Launcher) {
	start := time.Now()
	out, err := mpitest.StartWith(t, l, 3, "TestRankHangs", 60*time.Second)
	if err == nil || strings.Contains(err.Error(), "still running") {
		t.Fatalf("the job did not fail after a rank hung (%v, after %v):\n%s", err, time.Since(start), out)
	}
	if took := time.Since(start); took > 40*time.Second {
		t.Errorf("the job took %v to end with a timeout of 2s", took)
	}
	for _, r := range []int{0, 1} {
		want := fmt.Sprintf("rank %d diagnosed: collective: timed out: mpi: AllReduce #2 on rank %d of 3 has waited 2", r, r)
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the job's output:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "rank 2 did not answer within 1s") || !strings.Contains(out, fmt.Sprintf("rank %d waits in the same call", 1)) {
		t.Errorf("the error does not name the hung rank and the waiting one:\n%s", out)
	}
}

// TestRankHangs: after a first AllReduce, rank 2 sleeps instead of
// calling the second; the others report their error and exit.
func TestRankHangs(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestHungRankTimesOut's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(2 * time.Second)
	if _, err := c.AllReduce(tensor.FromSlice([]float32{1}), collective.Sum); err != nil {
		t.Fatal(err)
	}
	if c.Rank() == 2 {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	_, err = c.AllReduce(tensor.FromSlice([]float32{1}), collective.Sum)
	if !errors.Is(err, collective.ErrTimeout) || !errors.Is(err, collective.ErrCollective) {
		t.Fatalf("rank %d: AllReduce with rank 2 hung: %v", c.Rank(), err)
	}
	// The communicator stays failed: later calls and Close return the error.
	if err2 := c.Barrier(); err2 != err {
		t.Errorf("rank %d: Barrier after the timeout: %v", c.Rank(), err2)
	}
	if err2 := c.Close(); err2 != err {
		t.Errorf("rank %d: Close after the timeout: %v", c.Rank(), err2)
	}
	exitAfterReport(c.Rank(), err)
}

// Ranks that call different collectives are told so.
func TestMismatchedCollectivesAreNamed(t *testing.T) {
	out, err := mpitest.Start(t, 2, "TestRankMismatches", 60*time.Second)
	if err == nil || strings.Contains(err.Error(), "still running") {
		t.Fatalf("the job did not fail (%v):\n%s", err, out)
	}
	for _, want := range []string{
		"rank 0 diagnosed: collective: timed out: mpi: Broadcast #1 on rank 0 of 2",
		"waiting in other calls: rank 1 in Recv #1",
		"rank 1 diagnosed: collective: timed out: mpi: Recv #1 on rank 1 of 2",
		"waiting in other calls: rank 0 in Broadcast #1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the job's output:\n%s", want, out)
		}
	}
}

// TestRankMismatches: rank 0 broadcasts while rank 1 waits to receive.
func TestRankMismatches(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestMismatchedCollectivesAreNamed's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(2 * time.Second)
	// A broadcast larger than MPI's eager limit, so that the root waits.
	x := tensor.Zeros(tensor.Float32, 1<<20)
	if c.Rank() == 0 {
		_, err = c.Broadcast(x, 0)
	} else {
		_, err = c.Recv(x, 0, 5)
	}
	exitAfterReport(c.Rank(), err)
}

// exitAfterReport prints a rank's diagnosis and ends the rank, after a
// pause: MPICH's launcher kills every rank once one exits, and the others
// must have printed theirs by then.
func exitAfterReport(rank int, err error) {
	fmt.Printf("rank %d diagnosed: %v\n", rank, err)
	time.Sleep(2 * time.Second)
	os.Exit(4)
}
