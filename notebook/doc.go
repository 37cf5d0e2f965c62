// Package notebook shows eagerflow's values in a Jupyter notebook run by
// GoNB (github.com/janpfeifer/gonb), the Go kernel, and as text anywhere
// else, so the same code runs in a cell and as a program.
//
//	notebook.Show(x)                      // a tensor as a table: dtype, shape, marks
//	notebook.Image(batch, plot.ImageOptions{Cols: 8, Scale: 3})
//	notebook.Heatmap(weights)             // a matrix through a colour map, with its scale
//	notebook.Graph(f.Graph(x))            // a traced function's graph, frames as clusters
//	notebook.Model(model, x)              // layers, output shapes, parameter counts
//	live := notebook.NewLive(notebook.LiveOptions{Title: "mnist"})
//	cfg.Callbacks = append(cfg.Callbacks, live) // Fit's progress and curves, redrawn in place
//
// In a notebook each call adds an output to the cell: HTML tables, PNG
// images, SVG drawn by Graphviz's dot (the DOT text when dot is not
// installed). Elsewhere each writes text to Output: the tensor as String
// prints it, the graph's listing, the model's summary, progress lines.
//
// The package is a module of its own (its go.mod requires GoNB's gonbui),
// so programs that do not show notebooks do not download it. A notebook
// uses it after pointing Go at the checkout (see examples/notebooks/tour.ipynb
// and scripts/install-notebook, which installs Jupyter, GoNB and
// Graphviz).
//
// The functions are meant for the goroutine that runs a cell; they are not
// safe for concurrent use with each other.
package notebook
