package kernels

import "slices"

// NCHW rows too wide for a band's shared memory (three float32 rows of
// 16 KiB: some 1360 columns under a 3x3 window) go by bands split into
// column tiles: the "nchwtile" kernels of the band frame (pool_band.go:
// pooling's forward and selections, the gradient of windows that do not
// overlap, the depthwise forward, input and filter gradients) stage the
// input rows a tile's windows read, and those of the row-band frame
// (rowband.go: pooling's gradient over overlapping windows,
// dw_input_nchwrowtiles) the windows over a tile of operand rows. Each
// tile's rows are read and written as runs, each run's turns aligned on
// its sector, where whole bands are one run; neighbouring tiles read the
// columns their windows share twice, as bands do rows.

// Tiling is how a tiled band kernel splits NCHW planes: Per rows a band
// and Cols columns a tile (output rows and columns in the band frame,
// operand rows and columns in the row-band frame).
type Tiling struct{ Per, Cols int }

// tileRows is the rows a tile's staged array aims to hold: enough that a
// band's rows outnumber the rows neighbouring bands read again.
const tileRows = 8

// tileElements is the most elements a row-band tile holds: 16 for each of
// a block's 256 threads, so that a plane of few rows still spreads over
// enough blocks to fill a GPU.
const tileElements = 16 * 256

// BandTiling is the tiling of the band frame for p of dtype d, its input
// rows staged in bytes of shared memory and, where outBytes is not 0, its
// outputs too (outBytes a value: dw_filter_nchwtile's dy): tiles whose
// input rows are some tileRows rows of a stride, so that each output row
// reads few rows again. ok is false where one output's window does not
// fit, or the dtype has no band kernels.
func BandTiling(p PoolDims, d DType, bytes, outBytes int) (t Tiling, ok bool) {
	if !slices.Contains(quadTypes, d) || p.OH <= 0 || p.OW <= 0 || p.SH <= 0 || p.SW <= 0 {
		return t, false
	}
	eh, ew := p.Extent()
	size := d.Size()
	pitch := max(bytes/(size*(eh+(tileRows/2-1)*p.SH)), ew) // the staged columns a tile aims at
	t.Cols = min(max((pitch-ew)/p.SW+1, 1), p.OW)
	pitch = (t.Cols-1)*p.SW + ew
	t.Per = min((bytes/(pitch*size)-eh)/p.SH+1, p.OH)
	if outBytes > 0 {
		t.Per = min(t.Per, bytes/(t.Cols*outBytes))
	}
	return t, t.Per > 0
}

// RowBandTiling is the tiling of the row-band frame for p, each staged
// output taking unit bytes of shared memory (BandBytes): tiles of operand
// columns whose windows fill some tileRows staged rows. ok is false
// where the windows over one operand row of a tile do not fit.
func RowBandTiling(p PoolDims, unit int) (t Tiling, ok bool) {
	if p.H <= 0 || p.W <= 0 || p.OH <= 0 || p.OW <= 0 || p.SW <= 0 || unit <= 0 {
		return t, false
	}
	_, ew := p.Extent()
	outCols := BandBytes / (unit * tileRows)
	t.Cols = min(max((outCols-2)*p.SW-ew+2, 1), p.W)
	t.Per = RowBandRows(p, tileOutputs(p, t.Cols)*unit)
	if t.Per > 0 {
		t.Per = min(t.Per, max(tileElements/t.Cols, 1))
	}
	return t, t.Per > 0
}

// tileOutputs bounds the windows along a row over cols operand columns:
// those starting within the columns' span plus the window's extent.
func tileOutputs(p PoolDims, cols int) int {
	_, ew := p.Extent()
	return min((cols+ew-2)/p.SW+2, p.OW)
}

// Tiles is the column tiles across a row of cols columns.
func (t Tiling) Tiles(cols int) int { return (cols + t.Cols - 1) / t.Cols }

// Bands is the bands down a plane of rows rows.
func (t Tiling) Bands(rows int) int { return (rows + t.Per - 1) / t.Per }

// PoolTile reports whether the tiled band kernels take the NCHW pooling p
// of dtype d, whose rows are too wide for a band (PoolBand).
func PoolTile(p PoolDims, d DType) bool {
	_, ok := BandTiling(p, d, BandBytes, 0)
	return ok && !PoolBand(p, d)
}

// PoolScatterTile reports whether pool2d_select_scatter_nchwtile takes
// the gradient of the overlapping NCHW pooling p of dtype d.
func PoolScatterTile(p PoolDims, d DType) bool {
	_, ok := RowBandTiling(p, d.Size())
	return ok && slices.Contains(quadTypes, d)
}
