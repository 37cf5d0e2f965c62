module github.com/eagerflow/eagerflow

go 1.26.0

require (
	github.com/chewxy/math32 v1.11.1
	github.com/google/go-cmp v0.7.0
	golang.org/x/sys v0.49.0
)
