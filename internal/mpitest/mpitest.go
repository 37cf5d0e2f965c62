// Package mpitest runs a test's ranks under mpirun: a test calls Run to
// start its own test binary as np processes on loopback, each running one
// named test function, which calls Rank to learn that it is a rank (and
// skips otherwise). Where mpirun is missing, Run skips naming the install
// command, or fails when EAGERFLOW_REQUIRE_MPI is set (scripts/test sets
// it after installing Open MPI).
package mpitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const childEnv = "EAGERFLOW_MPI_TEST_CHILD"

// Rank reports whether this process is a rank started by Run.
func Rank() bool { return os.Getenv(childEnv) != "" }

// Run starts np copies of this test binary under mpirun, each running the
// test named test, and fails t unless every rank passes.
func Run(t *testing.T, np int, test string) {
	t.Helper()
	out, err := Start(t, np, test, 0)
	if err != nil {
		t.Fatalf("mpirun -np %d %s: %v\n%s", np, test, err, out)
	}
	if got := strings.Count(out, "--- PASS: "+test); got != np {
		t.Errorf("%d of %d ranks passed %s:\n%s", got, np, test, out)
	}
}

// Start runs np ranks of test under mpirun (killed after timeout, when
// not zero) and returns their output and mpirun's error, for tests that
// expect the job to fail.
func Start(t *testing.T, np int, test string, timeout time.Duration) (string, error) {
	t.Helper()
	if Rank() {
		t.Skip("a rank of the parent's mpirun")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("EAGERFLOW_REQUIRE_MPI") != "" {
			t.Fatalf("mpirun: %v (scripts/install-test-deps installs openmpi-bin)", err)
		}
		t.Skipf("mpirun: %v: install Open MPI (apt-get install openmpi-bin; scripts/install-test-deps does)", err)
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, mpirun, "-np", fmt.Sprint(np), "--oversubscribe",
		"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
		os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	// Open MPI refuses root without these; containers need the loopback
	// settings above.
	cmd.Env = append(os.Environ(), childEnv+"=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("still running after %v: %w", timeout, ctx.Err())
	}
	return string(out), err
}
