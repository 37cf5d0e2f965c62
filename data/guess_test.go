package data

import (
	"path/filepath"
	"testing"
)

// GuessKind must name the kind expected/ gives for every file of the corpus.
func TestGuessKindOnCorpus(t *testing.T) {
	for name := range corpus(t) {
		want := loadExpected(t, name)
		recs, _ := want["records"].([]any)
		if len(recs) == 0 {
			continue
		}
		r, err := OpenReader(filepath.Join(corpusDir, "files", name), ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		first, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got, exp := GuessKind(name, first), recs[0].(map[string]any)["kind"]; got != exp {
			t.Errorf("%s: guessed %s, expected %v", name, got, exp)
		}
		r.Close()
	}
}
