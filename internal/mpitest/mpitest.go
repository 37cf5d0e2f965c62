// Package mpitest runs a test's ranks under mpirun: a test calls Run to
// start its own test binary as np processes on loopback, each running one
// named test function, which calls Rank to learn that it is a rank (and
// skips otherwise). Where mpirun is missing, Run skips naming the install
// command, or fails when EAGERFLOW_REQUIRE_MPI is set (scripts/test sets
// it after installing Open MPI).
package mpitest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const childEnv = "EAGERFLOW_MPI_TEST_CHILD"

// Rank reports whether this process is a rank started by Run.
func Rank() bool { return os.Getenv(childEnv) != "" }

// Run starts np copies of this test binary under mpirun, each running the
// test named test, and fails t unless every rank passes.
func Run(t *testing.T, np int, test string) {
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
	cmd := exec.Command(mpirun, "-np", fmt.Sprint(np), "--oversubscribe",
		"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
		os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	// Open MPI refuses root without these; containers need the loopback
	// settings above.
	cmd.Env = append(os.Environ(), childEnv+"=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np %d %s: %v\n%s", np, test, err, out)
	}
	if got := strings.Count(string(out), "--- PASS: "+test); got != np {
		t.Errorf("%d of %d ranks passed %s:\n%s", got, np, test, out)
	}
}
