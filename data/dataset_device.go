package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/eagerflow/eagerflow/device"
)

// To copies each element's components to dev, so that a model whose
// variables live there (a GPU) reads its batches there; a Prefetch after
// it overlaps the copies with training. Components already on dev pass
// as they are. A failed copy is an error of the stage "To(<dev>)" naming
// the component; a nil dev, an error of the stage "To" at the first
// element, as the other stages report bad arguments.
func (d *Dataset) To(dev device.Device) *Dataset {
	if dev == nil {
		return failing("To", errors.New("data: To: the device is nil"))
	}
	stage := fmt.Sprintf("To(%s)", dev.Name())
	return d.derive(stage, func(epoch int) iterator {
		up := d.open(epoch)
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			e, err := up.next(ctx)
			if err != nil {
				return nil, stageErr(d.stage, err)
			}
			out := make(Element, len(e))
			for i, c := range e {
				if c == nil || c.Device() == dev {
					out[i] = c
					continue
				}
				if out[i], err = c.To(dev); err != nil {
					return nil, &StageError{Stage: stage, Err: fmt.Errorf("component %d: %w", i, err)}
				}
			}
			return out, nil
		}, closeFn: up.close}
	})
}
