// Package mpitest runs a test's ranks under mpirun: a test calls Run to
// start its own test binary as np processes on loopback, each running one
// named test function, which calls Rank to learn that it is a rank (and
// skips otherwise). Run uses Open MPI's mpirun; RunWith(MPICH, ...) uses
// MPICH's mpiexec (hydra) with EAGERFLOW_MPI_LIB naming MPICH's library.
// Where the launcher is missing, they skip naming the install command, or
// fail when EAGERFLOW_REQUIRE_MPI is set (scripts/test sets it after
// installing Open MPI and MPICH).
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

// Launcher is an MPI implementation's way of starting a job.
type Launcher int

const (
	OpenMPI Launcher = iota // mpirun, libmpi.so.40
	MPICH                   // mpiexec.hydra, EAGERFLOW_MPI_LIB naming libmpich.so.12 or libmpi.so.12
	// MPICHDetected is MPICH's mpiexec.hydra with no EAGERFLOW_MPI_LIB:
	// the ranks find the library from the launcher's environment.
	MPICHDetected
)

func (l Launcher) String() string {
	switch l {
	case MPICH:
		return "MPICH"
	case MPICHDetected:
		return "MPICH (library detected)"
	}
	return "OpenMPI"
}

// Run starts np copies of this test binary under Open MPI's mpirun, each
// running the test named test, and fails t unless every rank passes.
func Run(t *testing.T, np int, test string) {
	t.Helper()
	RunWith(t, OpenMPI, np, test)
}

// RunWith is Run under the launcher l.
func RunWith(t *testing.T, l Launcher, np int, test string) {
	t.Helper()
	out, err := StartWith(t, l, np, test, 0)
	if err != nil {
		t.Fatalf("mpirun -np %d %s: %v\n%s", np, test, err, out)
	}
	if got := strings.Count(out, "--- PASS: "+test+" ("); got != np { // not its subtests
		t.Errorf("%d of %d ranks passed %s:\n%s", got, np, test, out)
	}
}

// Start runs np ranks of test under Open MPI's mpirun (killed after
// timeout, when not zero) and returns their output and mpirun's error, for
// tests that expect the job to fail.
func Start(t *testing.T, np int, test string, timeout time.Duration) (string, error) {
	t.Helper()
	return StartWith(t, OpenMPI, np, test, timeout)
}

// StartWith is Start under the launcher l.
func StartWith(t *testing.T, l Launcher, np int, test string, timeout time.Duration) (string, error) {
	t.Helper()
	if Rank() {
		t.Skip("a rank of the parent's mpirun")
	}
	name, pkg := "mpirun", "openmpi-bin"
	if l != OpenMPI {
		name, pkg = "mpiexec.hydra", "mpich"
	}
	launcher, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("EAGERFLOW_REQUIRE_MPI") != "" {
			t.Fatalf("%s: %v (scripts/install-test-deps installs %s)", name, err, pkg)
		}
		t.Skipf("%s: %v: install it (apt-get install %s; scripts/install-test-deps does)", name, err, pkg)
	}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	self := []string{os.Args[0], "-test.run", "^" + test + "$", "-test.v"}
	env := append(os.Environ(), childEnv+"=1")
	var cmd *exec.Cmd
	switch l {
	case MPICH, MPICHDetected:
		cmd = exec.CommandContext(ctx, launcher, append([]string{"-n", fmt.Sprint(np)}, self...)...)
		if l == MPICH {
			env = append(env, "EAGERFLOW_MPI_LIB="+mpichLib())
		}
	default:
		cmd = exec.CommandContext(ctx, launcher, append([]string{"-np", fmt.Sprint(np), "--oversubscribe",
			"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"}, self...)...)
		// Open MPI refuses root without these; containers need the
		// loopback settings above.
		env = append(env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("still running after %v: %w", timeout, ctx.Err())
	}
	return string(out), err
}

// mpichLib is the name of MPICH's library: libmpich.so.12 as Debian
// installs it, where the dynamic linker knows it, else libmpi.so.12 as
// MPICH installs itself.
func mpichLib() string {
	if out, err := exec.Command("ldconfig", "-p").Output(); err == nil && strings.Contains(string(out), "libmpich.so.12 ") {
		return "libmpich.so.12"
	}
	return "libmpi.so.12"
}
