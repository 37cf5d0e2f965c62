module github.com/eagerflow/eagerflow

go 1.26

require (
	github.com/chewxy/math32 v1.11.1 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
)
