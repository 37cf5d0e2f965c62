// Package attnmask lays out the mask tensors ops.Attention takes, for
// the op's shape check and the backends' kernels: which shapes are
// masks for a call, and where a batch matrix's mask element lies.
package attnmask

// Layout places batch matrix b's mask element (query i, key j) at
// mask[(b/Rep)·Step + i·Row + j]: Rep batch matrices share each mask
// matrix (all of them for a [Tq, Tk] mask, the heads of a sequence for
// an [N, 1, Tq, Tk] one), Step elements apart, and Row is Tk, or 0 where
// one row of keys serves every query ([..., 1, Tk]: a key-padding mask).
type Layout struct{ Rep, Step, Row int }

// Of returns the layout of a mask of shape m for batch matrices of the
// batch dimensions batch, tq queries and tk keys, or false where m is
// not a mask for them. A mask is [Tq or 1, Tk], or has batch's rank
// before those two, each dimension batch's own or 1, the 1s a suffix
// (a prefix of the batch dimensions chooses the mask matrix).
func Of(batch []int, tq, tk int, m []int) (Layout, bool) {
	r := len(m)
	if r < 2 || m[r-1] != tk || (m[r-2] != tq && m[r-2] != 1) {
		return Layout{}, false
	}
	l := Layout{Step: m[r-2] * tk}
	if m[r-2] == tq {
		l.Row = tk
	}
	lead := m[:r-2]
	if len(lead) == 0 {
		l.Rep = 1
		for _, d := range batch {
			l.Rep *= d
		}
		l.Rep = max(l.Rep, 1)
		return l, true
	}
	if len(lead) != len(batch) {
		return Layout{}, false
	}
	p := 0
	for p < len(lead) && lead[p] == batch[p] {
		p++
	}
	l.Rep = 1
	for i := p; i < len(lead); i++ {
		if lead[i] != 1 {
			return Layout{}, false
		}
		l.Rep *= batch[i]
	}
	l.Rep = max(l.Rep, 1)
	return l, true
}

// Forms describes the mask shapes Of takes, for errors.
const Forms = "bool [..., Tq or 1, Tk] whose leading dimensions broadcast to the batch's (each the batch's own or 1)"
