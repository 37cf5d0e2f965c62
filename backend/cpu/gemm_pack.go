package cpu

// Packing of the GEMM's operands (gemm.go) into the micro-kernels' panels:
// A into panels mr rows tall (mr values per column), B into panels nr
// columns wide; the 12-row and 32-column panels of the AVX-512 kernels
// through the transposes of transpose_amd64.s.

// packA copies row panels [i0, i1) of op(a), columns [pc, pc+kcur), into
// dst: panel by panel, mr values per column, rows past m as zeros.
func (g *gemmOperands[T]) packA(dst []T, blk *gemmBlock[T], i0, i1 int) {
	mr, kc := g.kern.mr, blk.kcur
	for i := i0; i < i1; i++ {
		panel := dst[(i-i0)*mr*kc : (i-i0+1)*mr*kc]
		r0 := i * mr
		rows := min(mr, g.m-r0)
		if g.transA && mr == 12 && rows == 12 {
			packA12T(panel, g.a[blk.pc*g.m+r0:], g.m, kc)
			continue
		}
		if !g.transA && mr == 12 && rows == 12 && packA12(panel, g.a[r0*g.k+blk.pc:], g.k, kc) {
			continue
		}
		if g.transA { // a is [k, m]: its row p is column p of op(a)
			for p := 0; p < kc; p++ {
				d := panel[p*mr : (p+1)*mr]
				copy(d, g.a[(blk.pc+p)*g.m+r0:][:rows])
				clear(d[rows:])
			}
			continue
		}
		// Four rows at a time: four reads streams, one write stream.
		r := 0
		for ; r+4 <= rows; r += 4 {
			base := (r0+r)*g.k + blk.pc
			s0 := g.a[base:][:kc]
			s1 := g.a[base+g.k:][:kc]
			s2 := g.a[base+2*g.k:][:kc]
			s3 := g.a[base+3*g.k:][:kc]
			for p := range s0 {
				d := panel[p*mr+r : p*mr+r+4]
				d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
			}
		}
		for ; r < rows; r++ {
			for p, v := range g.a[(r0+r)*g.k+blk.pc:][:kc] {
				panel[p*mr+r] = v
			}
		}
		for r := rows; r < mr; r++ {
			for p := 0; p < kc; p++ {
				panel[p*mr+r] = 0
			}
		}
	}
}

// packA12T packs a full 12-row panel (the AVX-512 kernels' tile) from a
// transposed A: column p of the panel is the 12 values at a[p*lda:]. A copy
// of a fixed-size array stays in registers, where packA's general loop
// calls memmove per column (twice as slow on 64 and 256 rows).
func packA12T[T gemmElem](panel, a []T, lda, kc int) {
	panel = panel[:12*kc]
	if p32, ok := any(panel).([]float32); ok && haveAVX512 && kc > 0 {
		a32 := any(a).([]float32)
		_ = a32[(kc-1)*lda+11]
		spack12T(&p32[0], &a32[0], lda, kc)
		return
	}
	for p := range kc {
		*(*[12]T)(panel[p*12:]) = *(*[12]T)(a[p*lda:])
	}
}

// packsA12T reports whether packA12T copies through spack12T for T on
// this CPU (float32 with AVX-512, whose kernels are 12 rows tall): a
// transposed A then packs as fast as one read by rows.
func packsA12T[T gemmElem]() bool {
	_, f32 := any(*new(T)).(float32)
	return f32 && haveAVX512 && pickGemmKernel[T](1<<10).mr == 12
}

// packA12 packs a full 12-row panel from A's rows (lda elements apart)
// through AVX-512 transposes (float32: 12x16 blocks; float64: 12x8), the
// last columns in Go, and reports whether it did: elsewhere packA's Go
// loop, four rows at a time, runs at a quarter of their speed.
func packA12[T gemmElem](panel, a []T, lda, kc int) bool {
	if !haveAVX512 {
		return false
	}
	switch pv := any(panel).(type) {
	case []float32:
		packA12With(pv, any(a).([]float32), lda, kc, 16, strans12x16)
	case []float64:
		packA12With(pv, any(a).([]float64), lda, kc, 8, dtrans12x8)
	default:
		return false
	}
	return true
}

// packA12With is packA12 with trans, which packs w columns of 12 rows.
func packA12With[E float32 | float64](panel, a []E, lda, kc, w int, trans func(dst, src *E, lds int)) {
	panel = panel[:12*kc]
	p := 0
	for ; p+w <= kc; p += w {
		_ = a[11*lda+p+w-1]
		trans(&panel[p*12], &a[p], lda)
	}
	for ; p < kc; p++ {
		for r := range 12 {
			panel[p*12+r] = a[r*lda+p]
		}
	}
}

// packB copies column panel j of the block of op(b), rows [pc, pc+kcur),
// into dst: nr values per row, columns past the block as zeros.
func (g *gemmOperands[T]) packB(dst []T, blk *gemmBlock[T], j int) {
	nr, kc := g.kern.nr, blk.kcur
	c0 := blk.jc + j*nr
	cols := min(nr, blk.jc+blk.ncur-c0)
	if g.transB { // b is [n, k]: its row x is column x of op(b)
		// In blocks of 16 steps: each source row gives one cache line per
		// block, and the block's 16 panel rows stay in L1 for the writes.
		// (Walking the source rows side by side instead thrashes L1 when
		// k is a multiple of 1024: every row maps to the same cache set.)
		p0 := 0
		if nr == 32 {
			for ; p0+16 <= kc; p0 += 16 {
				packBT32(dst[p0*32:], g.b[c0*g.k+blk.pc+p0:], g.k, cols)
			}
		}
		for ; p0 < kc; p0 += 16 {
			p1 := min(p0+16, kc)
			for x := 0; x < cols; x++ {
				src := g.b[(c0+x)*g.k+blk.pc+p0 : (c0+x)*g.k+blk.pc+p1]
				for i, v := range src {
					dst[(p0+i)*nr+x] = v
				}
			}
			for p := p0; p < p1; p++ {
				clear(dst[p*nr+cols : (p+1)*nr])
			}
		}
		return
	}
	for p := 0; p < kc; p++ {
		d := dst[p*nr : (p+1)*nr]
		copy(d, g.b[(blk.pc+p)*g.n+c0:][:cols])
		clear(d[cols:])
	}
}

// packBT32 is packB's loop for a whole block of a 32-column panel (the
// AVX-512 float32 kernels') from a transposed B: 16 steps of cols <= 32
// rows, row x read at b[x*ldb:], columns past cols as zeros. Every index is
// a constant plus x, with x below 32 as the compiler can prove, so it
// checks none of them in the loop: four times as fast as the general loop
// (a 27-tap filter gradient's panel is a partial one).
func packBT32[T gemmElem](dst, b []T, ldb, cols int) {
	if haveAVX512 {
		if d32, ok := any(dst).([]float32); ok {
			packBT32AVX512(d32, any(b).([]float32), ldb, cols)
			return
		}
	}
	packBT32Go(dst, b, ldb, cols)
}

// packBT32AVX512 is packBT32 for float32 through strans16: each half of
// the 32 columns is a 16x16 transpose of 16 source rows, from a
// zero-padded copy where the half has fewer (three to four times the Go
// loop's speed on the 27-tap filter gradient's panels).
func packBT32AVX512(d, b []float32, ldb, cols int) {
	_ = d[16*32-1]
	for h := range 2 {
		rows := min(max(cols-16*h, 0), 16)
		switch {
		case rows == 16:
			_ = b[(16*h+15)*ldb+15]
			strans16(&d[16*h], 32, &b[16*h*ldb], ldb)
		case rows > 0:
			var pad [16 * 16]float32
			for x := range rows {
				copy(pad[x*16:x*16+16], b[(16*h+x)*ldb:][:16])
			}
			strans16(&d[16*h], 32, &pad[0], 16)
		default:
			for i := range 16 {
				clear(d[i*32+16*h : i*32+16*h+16])
			}
		}
	}
}

// packBT32Go is packBT32's loop in Go.
func packBT32Go[T gemmElem](dst, b []T, ldb, cols int) {
	d := (*[16 * 32]T)(dst)
	for x := range min(cols, 32) {
		s := (*[16]T)(b[x*ldb:])
		d[0*32+x] = s[0]
		d[1*32+x] = s[1]
		d[2*32+x] = s[2]
		d[3*32+x] = s[3]
		d[4*32+x] = s[4]
		d[5*32+x] = s[5]
		d[6*32+x] = s[6]
		d[7*32+x] = s[7]
		d[8*32+x] = s[8]
		d[9*32+x] = s[9]
		d[10*32+x] = s[10]
		d[11*32+x] = s[11]
		d[12*32+x] = s[12]
		d[13*32+x] = s[13]
		d[14*32+x] = s[14]
		d[15*32+x] = s[15]
	}
	for i := 0; cols < 32 && i < 16; i++ {
		clear(d[i*32+cols : (i+1)*32])
	}
}

// transposeInto writes the transpose of src [rows, cols] into dst [cols,
// rows]: float32 through 16x16 AVX-512 transposes where there are, the
// edges and other types element by element.
func transposeInto[T gemmElem](dst, src []T, rows, cols int) {
	dst, src = dst[:rows*cols], src[:rows*cols]
	r0, c0 := 0, 0
	if d32, ok := any(dst).([]float32); ok && haveAVX512 {
		s32 := any(src).([]float32)
		r0, c0 = rows/16*16, cols/16*16
		for i := 0; i < r0; i += 16 {
			for j := 0; j < c0; j += 16 {
				_ = s32[(i+15)*cols+j+15]
				_ = d32[(j+15)*rows+i+15]
				strans16(&d32[j*rows+i], rows, &s32[i*cols+j], cols)
			}
		}
	}
	for i := 0; i < rows; i++ {
		j := c0
		if i >= r0 {
			j = 0
		}
		for ; j < cols; j++ {
			dst[j*rows+i] = src[i*cols+j]
		}
	}
}
