"""Writes the golden files of data/csv's tests with Python's csv module
(run from this directory with python3; the files are committed, so the
tests need no Python)."""
import csv

rows = [
    # a text column with the separator, quotes and a line break, which the
    # writer quotes; empty and "NA" cells for the missing-value tests
    ["5.1", "3.5", "0", "true", "12", 'plain'],
    ["4.9", "", "1", "False", "-3", 'has, a comma'],
    ["6.2", "NA", "2", "1", "255", 'says "hi"\nand breaks'],
    ["1e-3", "-0.0", "2", "f", "0", ''],
]
with open("table.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["sepal_length", "sepal_width", "species", "flag", "count", "note"])
    w.writerows(rows)

with open("noheader.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t")
    w.writerows([[1, 2.5, 9007199254740993], [3, -4.25, -1]])

with open("ragged.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerows([["a", "b"], [1, 2], [3]])

with open("badcell.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerows([["a", "b"], [1, 2], [3, "x"]])
