package kernels

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// The inverse error function by Wichura's rational approximations of the
// normal distribution's percentage points (Algorithm AS241, PPND16,
// Applied Statistics 37(3), 1988), in the form Go's math.Erfinv (the
// CPU's kernel) evaluates them: x·A(r)/B(r) in r = 0.180625 - x²/4 for
// |x| <= 0.85; beyond, with t = √(ln 2 - ln(1 - |x|)), C(t - 1.6)/D(t -
// 1.6) for t <= 5 and E(t - 5)/F(t - 5) past it, signed as x.
var (
	erfinvA = []float64{1.1975323115670912564578e0, 4.7072688112383978012285e1, 6.9706266534389598238465e2,
		4.8548868893843886794648e3, 1.6235862515167575384252e4, 2.3782041382114385731252e4,
		1.1819493347062294404278e4, 8.8709406962545514830200e2}
	erfinvB = []float64{1, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3,
		2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3}
	erfinvC = []float64{1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0,
		3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1,
		2.27238449892691845833e-2, 7.74545014278341407640e-4}
	erfinvD = []float64{1.4142135623730950488016887e0, 2.9036514445419946173133295e0, 2.3707661626024532365971225e0,
		9.7547832001787427186894837e-1, 2.0945065210512749128288442e-1, 2.1494160384252876777097297e-2,
		7.7441459065157709165577218e-4, 1.4859850019840355905497876e-9}
	erfinvE = []float64{6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0,
		2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
		2.71155556874348757815e-5, 2.01033439929228813265e-7}
	erfinvF = []float64{1.414213562373095048801689e0, 8.482908416595164588112026e-1, 1.936480946950659106176712e-1,
		2.103693768272068968719679e-2, 1.112800997078859844711555e-3, 2.611088405080593625138020e-5,
		2.010321207683943062279931e-7, 2.891024605872965461538222e-15}
)

// erfinv is the inverse error function of the float64 x: ±∞ at ±1, NaN
// beyond and for NaN, -0 kept. Every region is computed and one
// selected (no branch).
func (m fm) erfinv(x ptx.Reg) ptx.Reg {
	ax := m.abs(x)
	r := m.sub(m.c(0.180625), m.mul(m.c(0.25), m.mul(ax, ax)))
	center := m.div(m.mul(ax, m.poly(r, erfinvA)), m.poly(r, erfinvB))
	t := m.sqrt(m.sub(m.c(math.Ln2), m.log(m.sub(m.c(1), ax))))
	near, far := m.sub(t, m.c(1.6)), m.sub(t, m.c(5))
	tail := m.sel(m.cmp("le", t, m.c(5)), m.div(m.poly(near, erfinvC), m.poly(near, erfinvD)),
		m.div(m.poly(far, erfinvE), m.poly(far, erfinvF)))
	v := m.sel(m.cmp("le", ax, m.c(0.85)), center, tail)
	v = m.copysign(m.sel(m.cmp("eq", ax, m.c(1)), m.c(math.Inf(1)), v), x)
	return m.sel(m.cmp("gtu", ax, m.c(1)), m.c(math.NaN()), v)
}
