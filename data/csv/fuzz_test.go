package csv_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/data/csv"
	"github.com/eagerflow/eagerflow/tensor"
)

// FuzzReadCSV reads arbitrary text under a schema chosen by the input:
// every outcome is a set of equally long columns of the schema's dtypes
// or an error, never a panic.
func FuzzReadCSV(f *testing.F) {
	for _, name := range []string{"table.csv", "noheader.tsv", "ragged.csv", "badcell.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(3), false)
	}
	f.Add([]byte("a,b\n\"1\",NA\n,\n"), uint8(0), false)
	f.Fuzz(func(t *testing.T, text []byte, pick uint8, noHeader bool) {
		dtypes := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16}
		s := csv.Schema{NoHeader: noHeader, Missing: []string{"NA"}}
		for i := range int(pick%4) + 1 {
			c := csv.Column{Index: i, DType: dtypes[(int(pick)+i)%len(dtypes)]}
			if i%2 == 1 {
				c.Default = 1
				if c.DType == tensor.Bool {
					c.Default = true
				}
			}
			s.Columns = append(s.Columns, c)
		}
		cols, err := csv.Read(bytes.NewReader(text), s)
		if err != nil {
			if !errors.Is(err, csv.ErrFormat) && !strings.HasPrefix(err.Error(), "csv: ") {
				t.Fatalf("error %q does not say what was wrong", err)
			}
			return
		}
		for i, c := range cols {
			if c.DType() != s.Columns[i].DType || c.Rank() != 1 || c.Dim(0) != cols[0].Dim(0) {
				t.Fatalf("column %d: %v%v", i, c.DType(), c.Shape())
			}
		}
	})
}
