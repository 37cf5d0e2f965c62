package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/eagerflow/eagerflow/internal/mathx"
)

func main() {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		var x float64
		switch i % 3 {
		case 0:
			x = r.Float64()*50 - 25
		case 1:
			x = math.Exp(r.Float64()*10 - 6)
		default:
			x = math.Exp(r.Float64() * 6.6)
		}
		fmt.Printf("%x %x %x %x %x\n", math.Float64bits(x), math.Float64bits(mathx.BesselI0(x)), math.Float64bits(mathx.BesselI1(x)), math.Float64bits(mathx.BesselI0e(x)), math.Float64bits(mathx.BesselI1e(x)))
	}
}
