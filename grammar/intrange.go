package grammar

import (
	"math"
	"strconv"
	"strings"
)

// buildMinMaxInt writes GBNF for the decimal integers in min..max
// (math.MinInt64 / math.MaxInt64: unbounded) with at most decimalsLeft
// digits when unbounded; after llama.cpp's build_min_max_int.
func buildMinMaxInt(minV, maxV int64, out *strings.Builder) {
	const decimalsLeft = 16
	hasMin, hasMax := minV != math.MinInt64, maxV != math.MaxInt64
	digitRange := func(from, to byte) {
		out.WriteByte('[')
		out.WriteByte(from)
		if from != to {
			out.WriteByte('-')
			out.WriteByte(to)
		}
		out.WriteByte(']')
	}
	moreDigits := func(minD, maxD int) {
		out.WriteString("[0-9]")
		if minD == maxD && minD == 1 {
			return
		}
		out.WriteString("{" + strconv.Itoa(minD))
		if maxD != minD {
			out.WriteByte(',')
			if maxD != math.MaxInt {
				out.WriteString(strconv.Itoa(maxD))
			}
		}
		out.WriteByte('}')
	}
	var uniformRange func(from, to string)
	uniformRange = func(from, to string) {
		i := 0
		for i < len(from) && i < len(to) && from[i] == to[i] {
			i++
		}
		if i > 0 {
			out.WriteString(`"` + from[:i] + `"`)
		}
		if i < len(from) && i < len(to) {
			if i > 0 {
				out.WriteByte(' ')
			}
			subLen := len(from) - i - 1
			if subLen > 0 {
				fromSub, toSub := from[i+1:], to[i+1:]
				zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
				toReached := false
				out.WriteByte('(')
				if fromSub == zeros {
					digitRange(from[i], to[i]-1)
					out.WriteByte(' ')
					moreDigits(subLen, subLen)
				} else {
					out.WriteString("[" + from[i:i+1] + "] (")
					uniformRange(fromSub, nines)
					out.WriteByte(')')
					if from[i] < to[i]-1 {
						out.WriteString(" | ")
						if toSub == nines {
							digitRange(from[i]+1, to[i])
							toReached = true
						} else {
							digitRange(from[i]+1, to[i]-1)
						}
						out.WriteByte(' ')
						moreDigits(subLen, subLen)
					}
				}
				if !toReached {
					out.WriteString(" | ")
					digitRange(to[i], to[i])
					out.WriteByte(' ')
					uniformRange(zeros, toSub)
				}
				out.WriteByte(')')
			} else {
				out.WriteString("[" + from[i:i+1] + "-" + to[i:i+1] + "]")
			}
		}
	}

	if hasMin && hasMax {
		if minV < 0 && maxV < 0 {
			out.WriteString(`"-" (`)
			buildMinMaxInt(-maxV, -minV, out)
			out.WriteByte(')')
			return
		}
		if minV < 0 {
			out.WriteString(`"-" (`)
			buildMinMaxInt(1, -minV, out) // llama.cpp allows "-0" here
			out.WriteString(") | ")
			minV = 0
		}
		minS, maxS := strconv.FormatInt(minV, 10), strconv.FormatInt(maxV, 10)
		for digits := len(minS); digits < len(maxS); digits++ {
			uniformRange(minS, strings.Repeat("9", digits))
			minS = "1" + strings.Repeat("0", digits)
			out.WriteString(" | ")
		}
		uniformRange(minS, maxS)
		return
	}
	// One side bounded: llama.cpp's recursion here loses the digit count of
	// the rest (minimum 100 let "10" through), so this is written directly.
	atLeast := func(m int64) { // m >= 0: the integers >= m, without sign
		ms := strconv.FormatInt(m, 10)
		if m == 0 {
			out.WriteString("[0] | [1-9] ")
			moreDigits(0, decimalsLeft-1)
			return
		}
		uniformRange(ms, strings.Repeat("9", len(ms)))
		if len(ms) < decimalsLeft {
			out.WriteString(" | [1-9] ")
			moreDigits(len(ms), decimalsLeft-1)
		}
	}
	if hasMin {
		if minV >= 0 {
			atLeast(minV)
			return
		}
		out.WriteString(`"-" (`)
		buildMinMaxInt(1, -minV, out)
		out.WriteString(") | [0] | [1-9] ")
		moreDigits(0, decimalsLeft-1)
		return
	}
	if maxV >= 0 {
		out.WriteString(`"-" [1-9] `)
		moreDigits(0, decimalsLeft-1)
		out.WriteString(" | ")
		buildMinMaxInt(0, maxV, out)
		return
	}
	out.WriteString(`"-" (`)
	atLeast(-maxV)
	out.WriteByte(')')
}
