module github.com/troupe-llm/troupe

go 1.26.0

require (
	github.com/dlclark/regexp2 v1.12.0
	golang.org/x/text v0.43.0
	gonum.org/v1/gonum v0.17.0
)
