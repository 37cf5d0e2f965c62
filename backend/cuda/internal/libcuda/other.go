//go:build !(linux && (amd64 || arm64))

package libcuda

import (
	"fmt"
	"runtime"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Load reports that the CUDA libraries are not loaded on this platform.
func Load() (cu.Driver, error) {
	return nil, fmt.Errorf("libcuda: the CUDA device is not available on %s/%s (linux/amd64 and linux/arm64 only)", runtime.GOOS, runtime.GOARCH)
}
