// Package libcuda is the cu.Driver of NVIDIA's libraries, loaded at run
// time with purego (no cgo): the CUDA driver API from libcuda.so.1 and,
// where found, cuBLAS (libcublas.so.13 or .12, with its libcublasLt).
// Nothing is loaded at init: Load finds and opens the files, and a missing
// file or symbol is an error naming what was looked for and where.
package libcuda

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Environment variables that steer the search.
const (
	// EnvPath is a list of directories (as PATH is written) searched
	// before the loader's own path and the places below.
	EnvPath = "EAGERFLOW_CUDA_PATH"
	// EnvLibcuda and EnvCublas name a file to load instead of searching.
	EnvLibcuda = "EAGERFLOW_LIBCUDA"
	EnvCublas  = "EAGERFLOW_LIBCUBLAS"
)

// Library names, most wanted first.
var (
	cudaNames    = []string{"libcuda.so.1"}
	cublasNames  = []string{"libcublas.so.13", "libcublas.so.12"}
	cublasLtName = map[string]string{"libcublas.so.13": "libcublasLt.so.13", "libcublas.so.12": "libcublasLt.so.12"}
)

// searchDirs lists the directories tried, in order, after EnvPath and
// before the loader's own search (which dlopen does with the bare name):
// the lib directories of pip's nvidia-* wheels (site-packages/nvidia/*/lib,
// which holds CUDA 13's nvidia/cu13/lib) under the Python installations
// found in the usual places, then the toolkit's default install.
func searchDirs() []string {
	var dirs []string
	if v := os.Getenv(EnvPath); v != "" {
		dirs = append(dirs, filepath.SplitList(v)...)
	}
	var roots []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(env); p != "" {
			roots = append(roots, p+"/lib/python3*/site-packages")
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, home+"/.local/lib/python3*/site-packages")
	}
	roots = append(roots,
		"/opt/*/.venv/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages")
	for _, r := range roots {
		sites, _ := filepath.Glob(r)
		for _, s := range sites {
			libs, _ := filepath.Glob(s + "/nvidia/*/lib")
			dirs = append(dirs, libs...)
		}
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	return slices.Compact(dirs)
}

// candidates lists the paths to try for a library of names: the override
// when set, else each name in each directory that holds it, then each bare
// name (the dynamic loader's own search: LD_LIBRARY_PATH, ldconfig's cache).
func candidates(override string, names []string, dirs []string) []string {
	if override != "" {
		return []string{override}
	}
	var out []string
	for _, n := range names {
		for _, d := range dirs {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
		out = append(out, n)
	}
	return out
}

// resolved returns the file the process mapped for a library opened as
// name (its path in /proc/self/maps), or name when it cannot tell.
func resolved(name string) string {
	if filepath.IsAbs(name) {
		if p, err := filepath.EvalSymlinks(name); err == nil {
			return p
		}
		return name
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return name
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.HasPrefix(filepath.Base(f[5]), name) {
			return f[5]
		}
	}
	return name
}
