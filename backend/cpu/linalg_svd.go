package cpu

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// SVD's kernel (ops/linalg_svd.go): one-sided Jacobi rotations in
// float64 of the tall one of a and aᵀ, the GPU's linalg kernel taking
// the same steps.

func init() {
	kernels{f32: svdKernel[float32], f64: svdKernel[float64]}.register("SVD")
}

func svdKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Inputs[0]
	m, n := a.Dim(-2), a.Dim(-1)
	k := min(m, n)
	if k == 0 {
		return
	}
	av, uv, sv, vtv := data[T](a), data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	rows := max(m, n)
	batch := len(av) / (m * n)
	deviceOf(c).Parallel(batch, float64(rows*k*k)*30+1, func(lo, hi int) {
		b, v := make([]float64, rows*k), make([]float64, k*k)
		s, u := make([]float64, k), make([]float64, rows*k)
		for bi := lo; bi < hi; bi++ {
			x := av[bi*m*n:][:m*n]
			finite := true
			for i := range m { // b is a, or aᵀ where wide (rows×k, tall), held transposed
				for j := range n {
					e := float64(x[i*n+j])
					finite = finite && !math.IsInf(e, 0) && !math.IsNaN(e)
					if m >= n {
						b[j*rows+i] = e
					} else {
						b[i*n+j] = e
					}
				}
			}
			uo, so, vto := uv[bi*m*k:][:m*k], sv[bi*k:][:k], vtv[bi*k*n:][:k*n]
			if !finite {
				for _, o := range [][]T{uo, so, vto} {
					for i := range o {
						o[i] = T(math.NaN())
					}
				}
				continue
			}
			tallSVD(b, v, s, u, rows, k)
			// a = U·S·Vᵀ (tall), or aᵀ's: a = V·S·Uᵀ. Signs by u's columns.
			for j := range k {
				so[j] = T(s[j])
				sign := columnSign(v, k, k, j) // u is aᵀ's v where wide
				if m >= n {
					sign = columnSign(u, m, k, j)
				}
				for i := range m {
					if m >= n {
						uo[i*k+j] = T(sign * u[i*k+j])
					} else {
						uo[i*k+j] = T(sign * v[i*k+j])
					}
				}
				for i := range n {
					if m >= n {
						vto[j*n+i] = T(sign * v[i*k+j])
					} else {
						vto[j*n+i] = T(sign * u[i*k+j])
					}
				}
			}
		}
	})
}

// tallSVD decomposes b (r×k, r ≥ k, finite), given transposed (bt, its
// rows b's columns), into u (r×k), s (descending) and v (k×k), each
// row-major, with b = u·diag(s)·vᵀ: b scaled by a power of 2 so that its
// largest magnitude is in [½, 1) (within 2^±1000); sweeps over the column
// pairs p < q in row order, each rotation (from I into v) making columns
// p and q orthogonal (α, β, γ their squared norms and dot product, rows
// ascending; t the smaller root for ζ = (β - α)/(2γ)) and skipped where
// |γ| ≤ 2⁻⁵³·√α·√β, until a sweep rotates nothing; then s the columns'
// norms sorted (the first of equals first), u the columns over them, and
// for each s of 0 the first unit vector eᵢ made orthogonal to u's earlier
// columns (twice, by Gram and Schmidt) whose remainder is at least ½
// long, normalized. bt and v are overwritten (v holds vᵀ during the
// sweeps, so that every rotation turns contiguous rows).
func tallSVD(bt, v, s, u []float64, r, k int) {
	big := 0.0
	for _, x := range bt[:r*k] {
		big = max(big, math.Abs(x))
	}
	// big's binary exponent from its bits (the GPU's way), held to ±1000
	// so that 2^±e is a normal number and each scaling exact.
	e := min(max(int(math.Float64bits(big)>>52&0x7ff)-1022, -1000), 1000)
	down := math.Ldexp(1, -e)
	for i := range bt[:r*k] {
		bt[i] *= down
	}
	setIdentity(v, k, k)
	for range jacobiSweeps {
		rotated := false
		for p := range k {
			bp := bt[p*r:][:r]
			for q := p + 1; q < k; q++ {
				bq := bt[q*r:][:r]
				alpha, beta, gamma := 0.0, 0.0, 0.0
				for i, x := range bp {
					y := bq[i]
					alpha += x * x
					beta += y * y
					gamma += x * y
				}
				if math.Abs(gamma) <= 0x1p-53*math.Sqrt(alpha)*math.Sqrt(beta) {
					continue
				}
				rotated = true
				c, sn, _ := jacobiRotation((beta - alpha) / (2 * gamma))
				turnRows(bp, bq, c, sn)
				turnRows(v[p*k:][:k], v[q*k:][:k], c, sn)
			}
		}
		if !rotated {
			break
		}
	}
	norms := make([]float64, k)
	for j := range k {
		sum := 0.0
		for _, x := range bt[j*r:][:r] {
			sum += x * x
		}
		norms[j] = math.Sqrt(sum)
	}
	order := insertionOrder(k, func(i, j int) bool { return norms[i] > norms[j] }) // descending
	vt := slices.Clone(v[:k*k])
	for j, col := range order {
		s[j] = norms[col] * math.Ldexp(1, e)
		for i := range k {
			v[i*k+j] = vt[col*k+i]
		}
		for i, x := range bt[col*r:][:r] {
			u[i*k+j] = 0
			if norms[col] > 0 {
				u[i*k+j] = x / norms[col]
			}
		}
		if norms[col] == 0 {
			completeBasis(u, r, k, j)
		}
	}
}

// completeBasis sets column j of u (r×k) to a unit vector orthogonal to
// its columns before j: the first eᵢ whose remainder after two passes of
// Gram and Schmidt is at least ½ long.
func completeBasis(u []float64, r, k, j int) {
	for e := range r {
		for i := range r {
			u[i*k+j] = 0
		}
		u[e*k+j] = 1
		for range 2 {
			for p := range j {
				dot := 0.0
				for i := range r {
					dot += u[i*k+p] * u[i*k+j]
				}
				for i := range r {
					u[i*k+j] -= dot * u[i*k+p]
				}
			}
		}
		sum := 0.0
		for i := range r {
			sum += u[i*k+j] * u[i*k+j]
		}
		if norm := math.Sqrt(sum); norm >= 0.5 {
			for i := range r {
				u[i*k+j] /= norm
			}
			return
		}
	}
}
