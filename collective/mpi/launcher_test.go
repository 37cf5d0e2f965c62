//go:build linux || darwin

package mpi

import (
	"slices"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDetectLauncher(t *testing.T) {
	for _, c := range []struct {
		name        string
		env         map[string]string
		size, local int
		first       string
	}{
		{"none", nil, 0, 0, "libmpi.so.40"},
		{"Open MPI", map[string]string{"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 4, 2, "libmpi.so.40"},
		{"Hydra", map[string]string{"PMI_SIZE": "2", "PMI_RANK": "1", "MPI_LOCALNRANKS": "2"}, 2, 2, "libmpi.so.12"},
		{"srun pmix", map[string]string{"PMIX_RANK": "0", "SLURM_NTASKS": "8", "SLURM_PROCID": "0", "SLURM_TASKS_PER_NODE": "4(x2)"}, 8, 4, "libmpi.so.40"},
		{"srun alone", map[string]string{"SLURM_NTASKS": "3", "SLURM_PROCID": "2", "SLURM_NTASKS_PER_NODE": "3"}, 3, 3, "libmpi.so.40"},
	} {
		l := detectLauncher(envOf(c.env))
		if l.size != c.size || l.local != c.local {
			t.Errorf("%s: size %d local %d, want %d %d", c.name, l.size, l.local, c.size, c.local)
		}
		names := l.libNames(envOf(c.env))
		if names[0] != c.first || len(names) != 5 {
			t.Errorf("%s: libraries %v, want %s first, all five", c.name, names, c.first)
		}
	}
	named := map[string]string{"PMI_SIZE": "2", "EAGERFLOW_MPI_LIB": "/opt/mpi/libmpi.so.12"}
	if got := detectLauncher(envOf(named)).libNames(envOf(named)); !slices.Equal(got, []string{"/opt/mpi/libmpi.so.12"}) {
		t.Errorf("EAGERFLOW_MPI_LIB: %v", got)
	}
}

func TestLauncherSizeMustMatch(t *testing.T) {
	hydra := detectLauncher(envOf(map[string]string{"PMI_SIZE": "2"}))
	if err := hydra.check(2, "libmpich.so.12", "MPICH"); err != nil {
		t.Error(err)
	}
	err := hydra.check(1, "libmpi.so.40", "Open MPI")
	if err == nil || !strings.Contains(err.Error(), "PMI_SIZE=2") || !strings.Contains(err.Error(), "EAGERFLOW_MPI_LIB=libmpich.so.12") {
		t.Errorf("Hydra's 2 processes seen as 1: %v", err)
	}
	ompi := detectLauncher(envOf(map[string]string{"OMPI_COMM_WORLD_SIZE": "3"}))
	if err := ompi.check(1, "libmpich.so.12", "MPICH"); err == nil || !strings.Contains(err.Error(), "EAGERFLOW_MPI_LIB=libmpi.so.40") {
		t.Errorf("mpirun's 3 processes seen as 1: %v", err)
	}
	if err := (launcher{}).check(1, "libmpi.so.40", "Open MPI"); err != nil {
		t.Errorf("no launcher: %v", err)
	}
}

func TestYieldWhenOversubscribed(t *testing.T) {
	for _, c := range []struct {
		name  string
		env   map[string]string
		local int
		want  bool
	}{
		{"more ranks than cores", nil, 1 << 20, true},
		{"one rank", nil, 1, false},
		{"forced on", map[string]string{"EAGERFLOW_MPI_YIELD": "1"}, 1, true},
		{"forced off", map[string]string{"EAGERFLOW_MPI_YIELD": "0"}, 1 << 20, false},
		{"the user's own setting kept", map[string]string{"OMPI_MCA_mpi_yield_when_idle": "0"}, 1 << 20, true},
	} {
		set := map[string]string{}
		got := launcher{local: c.local}.yieldWhenIdle(envOf(c.env), func(k, v string) error { set[k] = v; return nil })
		if got != c.want {
			t.Errorf("%s: yield %v, want %v", c.name, got, c.want)
		}
		if got && c.env["OMPI_MCA_mpi_yield_when_idle"] == "" && (set["OMPI_MCA_mpi_yield_when_idle"] != "1" || set["MPIR_CVAR_POLLS_BEFORE_YIELD"] != "1") {
			t.Errorf("%s: set %v", c.name, set)
		}
		if _, ok := set["OMPI_MCA_mpi_yield_when_idle"]; ok && c.env["OMPI_MCA_mpi_yield_when_idle"] != "" {
			t.Errorf("%s: overrode the user's setting", c.name)
		}
	}
}
