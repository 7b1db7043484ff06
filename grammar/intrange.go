package grammar

import (
	"math"
	"strconv"
	"strings"
)

// intDecimalsLeft bounds the digits of an integer bounded on one side only.
const intDecimalsLeft = 16

// buildMinMaxInt writes GBNF for the decimal integers in min..max
// (math.MinInt64 / math.MaxInt64: unbounded) with at most intDecimalsLeft
// digits when unbounded; after llama.cpp's build_min_max_int.
func buildMinMaxInt(minV, maxV int64, out *strings.Builder) {
	w := intRangeWriter{out}
	hasMin, hasMax := minV != math.MinInt64, maxV != math.MaxInt64
	switch {
	case hasMin && hasMax:
		w.bounded(minV, maxV)
	case hasMin:
		w.atLeastSigned(minV)
	default:
		w.atMostSigned(maxV)
	}
}

// intRangeWriter holds the GBNF pieces buildMinMaxInt is made of.
type intRangeWriter struct{ out *strings.Builder }

// digitRange writes the class [from-to] (or [from] when they are equal).
func (w intRangeWriter) digitRange(from, to byte) {
	w.out.WriteByte('[')
	w.out.WriteByte(from)
	if from != to {
		w.out.WriteByte('-')
		w.out.WriteByte(to)
	}
	w.out.WriteByte(']')
}

// moreDigits writes minD to maxD digits (maxD math.MaxInt: unbounded).
func (w intRangeWriter) moreDigits(minD, maxD int) {
	w.out.WriteString("[0-9]")
	if minD == maxD && minD == 1 {
		return
	}
	w.out.WriteString("{" + strconv.Itoa(minD))
	if maxD != minD {
		w.out.WriteByte(',')
		if maxD != math.MaxInt {
			w.out.WriteString(strconv.Itoa(maxD))
		}
	}
	w.out.WriteByte('}')
}

// uniformRange writes the numbers from..to, both of the same digit count.
func (w intRangeWriter) uniformRange(from, to string) {
	i := 0
	for i < len(from) && i < len(to) && from[i] == to[i] {
		i++
	}
	if i > 0 {
		w.out.WriteString(`"` + from[:i] + `"`)
	}
	if i >= len(from) || i >= len(to) {
		return
	}
	if i > 0 {
		w.out.WriteByte(' ')
	}
	if len(from)-i-1 > 0 {
		w.splitRange(from, to, i)
	} else {
		w.out.WriteString("[" + from[i:i+1] + "-" + to[i:i+1] + "]")
	}
}

// splitRange writes uniformRange's alternatives from the first digit i
// where from and to differ, with digits left after it.
func (w intRangeWriter) splitRange(from, to string, i int) {
	subLen := len(from) - i - 1
	fromSub, toSub := from[i+1:], to[i+1:]
	zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
	toReached := false
	w.out.WriteByte('(')
	if fromSub == zeros {
		w.digitRange(from[i], to[i]-1)
		w.out.WriteByte(' ')
		w.moreDigits(subLen, subLen)
	} else {
		w.out.WriteString("[" + from[i:i+1] + "] (")
		w.uniformRange(fromSub, nines)
		w.out.WriteByte(')')
		if from[i] < to[i]-1 {
			w.out.WriteString(" | ")
			if toSub == nines {
				w.digitRange(from[i]+1, to[i])
				toReached = true
			} else {
				w.digitRange(from[i]+1, to[i]-1)
			}
			w.out.WriteByte(' ')
			w.moreDigits(subLen, subLen)
		}
	}
	if !toReached {
		w.out.WriteString(" | ")
		w.digitRange(to[i], to[i])
		w.out.WriteByte(' ')
		w.uniformRange(zeros, toSub)
	}
	w.out.WriteByte(')')
}

// bounded writes the integers in minV..maxV.
func (w intRangeWriter) bounded(minV, maxV int64) {
	if minV < 0 && maxV < 0 {
		w.out.WriteString(`"-" (`)
		buildMinMaxInt(-maxV, -minV, w.out)
		w.out.WriteByte(')')
		return
	}
	if minV < 0 {
		w.out.WriteString(`"-" (`)
		buildMinMaxInt(1, -minV, w.out) // llama.cpp allows "-0" here
		w.out.WriteString(") | ")
		minV = 0
	}
	minS, maxS := strconv.FormatInt(minV, 10), strconv.FormatInt(maxV, 10)
	for digits := len(minS); digits < len(maxS); digits++ {
		w.uniformRange(minS, strings.Repeat("9", digits))
		minS = "1" + strings.Repeat("0", digits)
		w.out.WriteString(" | ")
	}
	w.uniformRange(minS, maxS)
}

// One side bounded: llama.cpp's recursion here loses the digit count of
// the rest (minimum 100 let "10" through), so these are written directly.

// atLeast writes the integers >= m (m >= 0), without sign.
func (w intRangeWriter) atLeast(m int64) {
	ms := strconv.FormatInt(m, 10)
	if m == 0 {
		w.out.WriteString("[0] | [1-9] ")
		w.moreDigits(0, intDecimalsLeft-1)
		return
	}
	w.uniformRange(ms, strings.Repeat("9", len(ms)))
	if len(ms) < intDecimalsLeft {
		w.out.WriteString(" | [1-9] ")
		w.moreDigits(len(ms), intDecimalsLeft-1)
	}
}

// atLeastSigned writes the integers >= minV.
func (w intRangeWriter) atLeastSigned(minV int64) {
	if minV >= 0 {
		w.atLeast(minV)
		return
	}
	w.out.WriteString(`"-" (`)
	buildMinMaxInt(1, -minV, w.out)
	w.out.WriteString(") | [0] | [1-9] ")
	w.moreDigits(0, intDecimalsLeft-1)
}

// atMostSigned writes the integers <= maxV.
func (w intRangeWriter) atMostSigned(maxV int64) {
	if maxV >= 0 {
		w.out.WriteString(`"-" [1-9] `)
		w.moreDigits(0, intDecimalsLeft-1)
		w.out.WriteString(" | ")
		buildMinMaxInt(0, maxV, w.out)
		return
	}
	w.out.WriteString(`"-" (`)
	w.atLeast(-maxV)
	w.out.WriteByte(')')
}
