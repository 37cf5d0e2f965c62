//go:build linux || darwin

package mpi

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// The job's launcher, read from the environment it gives its processes,
// decides which MPI library to load and how the ranks wait. A library of
// another implementation than the launcher's does not see the job: it
// starts a world of one process, so every rank trains alone. Open loads
// the launcher's library first and fails, naming the library to set in
// EAGERFLOW_MPI_LIB, when the world it sees is not the launcher's size.

// Library names by implementation, in the order they are tried.
var (
	openMPILibs = []string{"libmpi.so.40", "libmpi.40.dylib"}
	mpichLibs   = []string{"libmpi.so.12", "libmpich.so.12", "libmpi.12.dylib"}
)

// launcher is what the environment says of the job.
type launcher struct {
	name  string   // "Open MPI's mpirun (OMPI_COMM_WORLD_SIZE=2)"; "" outside any
	size  int      // the processes it started; 0 when it does not say
	local int      // of them, those on this machine; 0 when it does not say
	libs  []string // the libraries of its implementation, first to try
}

// detectLauncher reads the launcher from env (os.Getenv in use): Open
// MPI's mpirun (OMPI_COMM_WORLD_SIZE), a PMI launcher, MPICH's Hydra
// mpiexec or srun --mpi=pmi2 (PMI_SIZE), a PMIx one, Open MPI 5's or srun
// --mpi=pmix (PMIX_RANK), or Slurm's srun alone (SLURM_NTASKS).
func detectLauncher(env func(string) string) launcher {
	num := func(k string) int {
		n, _ := strconv.Atoi(env(k))
		return n
	}
	var l launcher
	switch {
	case env("OMPI_COMM_WORLD_SIZE") != "":
		l = launcher{name: fmt.Sprintf("Open MPI's mpirun (OMPI_COMM_WORLD_SIZE=%s)", env("OMPI_COMM_WORLD_SIZE")),
			size: num("OMPI_COMM_WORLD_SIZE"), local: num("OMPI_COMM_WORLD_LOCAL_SIZE"), libs: openMPILibs}
	case env("PMI_SIZE") != "":
		l = launcher{name: fmt.Sprintf("a PMI launcher, MPICH's mpiexec or srun --mpi=pmi2 (PMI_SIZE=%s)", env("PMI_SIZE")),
			size: num("PMI_SIZE"), local: num("MPI_LOCALNRANKS"), libs: mpichLibs}
	case env("PMIX_RANK") != "":
		l = launcher{name: "a PMIx launcher, Open MPI 5's mpirun or srun --mpi=pmix (PMIX_RANK)",
			size: num("SLURM_NTASKS"), libs: openMPILibs}
	case env("SLURM_NTASKS") != "" && env("SLURM_PROCID") != "":
		l = launcher{name: fmt.Sprintf("Slurm's srun (SLURM_NTASKS=%s)", env("SLURM_NTASKS")), size: num("SLURM_NTASKS")}
	}
	if l.local == 0 {
		// Slurm: "2" or "2(x3)", this node's tasks first.
		if s := env("SLURM_NTASKS_PER_NODE"); s != "" {
			l.local, _ = strconv.Atoi(s)
		} else if s := env("SLURM_TASKS_PER_NODE"); s != "" {
			l.local, _ = strconv.Atoi(strings.SplitN(s, "(", 2)[0])
		}
	}
	return l
}

// libNames are the files tried, in order: EAGERFLOW_MPI_LIB when set, else
// the launcher's implementation's, then the others (Open MPI's first).
func (l launcher) libNames(env func(string) string) []string {
	if p := env("EAGERFLOW_MPI_LIB"); p != "" {
		return []string{p}
	}
	out := slices.Clone(l.libs)
	for _, n := range slices.Concat(openMPILibs, mpichLibs) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// check fails a world of size processes (as the loaded library, at path,
// sees it) that is not the launcher's.
func (l launcher) check(size int, path, impl string) error {
	if l.size == 0 || size == l.size {
		return nil
	}
	want := "libmpich.so.12 (or libmpi.so.12)"
	if slices.Equal(l.libs, openMPILibs) {
		want = "libmpi.so.40"
	}
	return fmt.Errorf("%s started %d processes, but %s (%s) sees a world of %d: it is not the launcher's MPI; "+
		"set EAGERFLOW_MPI_LIB=%s, or start the job with %s's own launcher", l.name, l.size, path, impl, size, want, impl)
}

// yieldWhenIdle sets, before MPI starts, the library's option to give the
// CPU away while a rank waits (Open MPI's mpi_yield_when_idle, MPICH's
// POLLS_BEFORE_YIELD) when this machine's ranks are more than the cores
// they may run on: a rank spinning in MPI's busy-poll then holds a core
// that the rank it waits for needs. Load from other programs does not
// count: there yielding hands the core to them for a whole time slice at
// every message, and measured slower (bench/README.md, "Oversubscribed
// ranks"). EAGERFLOW_MPI_YIELD=1 or 0 forces the choice; an option the
// user set in the environment is kept. It returns whether the ranks
// yield.
func (l launcher) yieldWhenIdle(env func(string) string, setenv func(k, v string) error) bool {
	yield := false
	switch env("EAGERFLOW_MPI_YIELD") {
	case "1":
		yield = true
	case "0":
	default:
		yield = l.local > runtime.NumCPU()
	}
	if !yield {
		return false
	}
	for k, v := range map[string]string{"OMPI_MCA_mpi_yield_when_idle": "1", "MPIR_CVAR_POLLS_BEFORE_YIELD": "1"} {
		if env(k) == "" {
			setenv(k, v)
		}
	}
	return true
}
