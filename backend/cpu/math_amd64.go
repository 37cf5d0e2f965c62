//go:build amd64 && !purego

package cpu

// The float32 vector kernels of transcendental functions (AVX2 and FMA;
// stanh16 and ssigmoid16 AVX-512), in math_exp_amd64.s, math_tanh_amd64.s,
// math_log_amd64.s, math_erf_amd64.s, math_trig_amd64.s, math_atan_amd64.s,
// math_logs_amd64.s and math_expm1_amd64.s. Each takes n a multiple of its
// lanes; fastmath.go runs them over the whole blocks and the rest in Go.

//go:noescape
func sexp8(dst, x *float32, n int)

//go:noescape
func ssigmoid8(dst, x *float32, n int)

//go:noescape
func ssigmoid16(dst, x *float32, n int)

//go:noescape
func stanh8(dst, x *float32, n int)

//go:noescape
func stanh16(dst, x *float32, n int)

//go:noescape
func slog8(dst, x *float32, n int)

//go:noescape
func serf8(dst, x *float32, n int)

//go:noescape
func sphi8(dst, x *float32, n int)

// strig4 returns how many of n it did (it stops before a group of four
// holding an argument past its reduction's range).
//
//go:noescape
func strig4(dst, x *float32, n, mode int) int

// satan4, slogs4, sexpm1_4 and ssoftplus4 (math_atan_amd64.s,
// math_logs_amd64.s, math_expm1_amd64.s, math_softplus_amd64.s) return
// how many of n they did, as strig4.
//
//go:noescape
func satan4(dst, x *float32, n int) int

//go:noescape
func slogs4(dst, x *float32, n, mode int) int

//go:noescape
func sexpm1_4(dst, x *float32, n int) int

//go:noescape
func ssoftplus4(dst, x *float32, n int) int
