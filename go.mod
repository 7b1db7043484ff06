module github.com/troupe-llm/troupe

go 1.26.0

require (
	github.com/dlclark/regexp2 v1.12.0
	github.com/rs/zerolog v1.35.1
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.43.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)
