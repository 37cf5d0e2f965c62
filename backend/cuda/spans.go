package cuda

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
)

// CopySpans copies each span in a launch for every kernels.OptimSlots of
// them (device.SpanCopier: a concatenation's inputs), by the widest unit
// of 8, 4, 2 or 1 bytes that every span's addresses and length allow.
func (d *Device) CopySpans(spans []device.Span, esize int) error {
	var tab []kernels.OptimTensor
	unit := 8
	for i, s := range spans {
		db, sb, err := copyBufs(d, s.Dst, s.Src)
		if err != nil {
			return fmt.Errorf("cuda: span %d: %w", i, err)
		}
		if s.N <= 0 {
			continue
		}
		src, dst, n := uint64(sb.ptr)+uint64(s.SOff*esize), uint64(db.ptr)+uint64(s.DOff*esize), uint64(s.N*esize)
		if dst+n > uint64(db.ptr)+uint64(db.size) || src+n > uint64(sb.ptr)+uint64(sb.size) {
			return fmt.Errorf("cuda: span %d: %d bytes beyond a buffer", i, n)
		}
		for unit > 1 && (src|dst|n)%uint64(unit) != 0 {
			unit /= 2
		}
		tab = append(tab, kernels.OptimTensor{Ptrs: []uint64{src, dst}, N: int(n)})
	}
	for i := range tab {
		tab[i].N /= unit
	}
	width := map[int]string{1: "b8", 2: "b16", 4: "b32", 8: "b64"}[unit]
	return eachTable(tab, func(slots int, table []byte, blocks, _ int) error {
		return d.launchBlocks("optim", kernels.CopySpansName(slots, width), blocks, blockSize, newArgs().Bytes(table, 8))
	})
}

var _ device.SpanCopier = (*Device)(nil)
