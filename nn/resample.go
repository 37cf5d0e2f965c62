package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Layers without variables that change images' spatial size.

// GlobalAvgPool2D averages each channel over the image (Keras's
// GlobalAveragePooling2D, PyTorch's AdaptiveAvgPool2d(1) then flattened):
// x [N, H, W, C] (or NCHW) -> [N, C], the classifier head of a CNN
// without a flattened Dense layer's parameters.
type GlobalAvgPool2D struct{ Format ops.DataFormat }

// Forward averages.
func (p GlobalAvgPool2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.Mean(x, spatialAxes("GlobalAvgPool2D", x, p.Format)...)
}

// Variables returns none.
func (GlobalAvgPool2D) Variables() []*tape.Variable { return nil }

// GlobalMaxPool2D takes each channel's largest value over the image
// (Keras's GlobalMaxPooling2D): x [N, H, W, C] (or NCHW) -> [N, C].
type GlobalMaxPool2D struct{ Format ops.DataFormat }

// Forward takes the maxima.
func (p GlobalMaxPool2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.Amax(x, spatialAxes("GlobalMaxPool2D", x, p.Format)...)
}

// Variables returns none.
func (GlobalMaxPool2D) Variables() []*tape.Variable { return nil }

// spatialAxes are an image batch's height and width axes in format f,
// after checking that x is one (layer names the layer in the error).
func spatialAxes(layer string, x *tensor.Tensor, f ops.DataFormat) []int {
	mustArgs(layer, arg{"x", x})
	if x.Rank() != 4 || f > ops.NCHW {
		panic(tensor.NewError("nn", layer, tensor.ErrShape, []*tensor.Tensor{x}, "", "x must be a batch of images, %v (layout %d), got %v", f, f, x.Shape()))
	}
	if f == ops.NCHW {
		return []int{2, 3}
	}
	return []int{1, 2}
}

// UpSampling2D repeats each pixel Size[0] times down and Size[1] times
// across (nearest-neighbour upsampling: Keras's UpSampling2D, PyTorch's
// Upsample(mode="nearest") by an integer factor): x [N, H, W, C] (or
// NCHW) -> [N, H·Size[0], W·Size[1], C]; a zero Size is 2x2. Its gradient
// sums each block of copies.
type UpSampling2D struct {
	Size   [2]int
	Format ops.DataFormat
}

// Forward repeats the pixels.
func (u UpSampling2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	axes := spatialAxes("UpSampling2D", x, u.Format)
	s := u.Size
	if s == [2]int{} {
		s = [2]int{2, 2}
	}
	if s[0] < 1 || s[1] < 1 {
		panic(tensor.NewError("nn", "UpSampling2D", tensor.ErrAttr, []*tensor.Tensor{x}, "", "the factors %v must be at least 1", s))
	}
	// Each spatial axis a gets a new axis of size 1 after it, broadcast
	// to its factor, then merged with it.
	sh := x.Shape()
	spread, wide, out := []int{}, []int{}, sh.Clone()
	for d := range sh {
		spread, wide = append(spread, sh[d]), append(wide, sh[d])
		for i, a := range axes {
			if d == a {
				spread, wide = append(spread, 1), append(wide, s[i])
				out[d] *= s[i]
			}
		}
	}
	return ops.Reshape(ops.BroadcastTo(ops.Reshape(x, spread...), wide...), out...)
}

// Variables returns none.
func (UpSampling2D) Variables() []*tape.Variable { return nil }

func (p GlobalAvgPool2D) String() string { return "GlobalAvgPool2D" + layoutSuffix(p.Format) }
func (p GlobalMaxPool2D) String() string { return "GlobalMaxPool2D" + layoutSuffix(p.Format) }
func (u UpSampling2D) String() string {
	s := u.Size
	if s == [2]int{} {
		s = [2]int{2, 2}
	}
	return fmt.Sprintf("UpSampling2D: %dx%d", s[0], s[1]) + layoutSuffix(u.Format)
}

// layoutSuffix is ", NCHW" for that layout, "" for NHWC.
func layoutSuffix(f ops.DataFormat) string {
	if t := formatText(f); t != "" {
		return ", " + t
	}
	return ""
}
