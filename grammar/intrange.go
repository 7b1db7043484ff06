package grammar

import (
	"math"
	"strconv"
	"strings"
)

// intDecimalsLeft bounds the digits of an integer bounded on one side only.
const intDecimalsLeft = 16

// intRange is the decimal integers in min..max (math.MinInt64 /
// math.MaxInt64: unbounded) with at most intDecimalsLeft digits when
// unbounded; after llama.cpp's build_min_max_int, in its layout.
func intRange(minV, maxV int64) Expr {
	hasMin, hasMax := minV != math.MinInt64, maxV != math.MaxInt64
	switch {
	case hasMin && hasMax:
		return intBounded(minV, maxV)
	case hasMin:
		return intAtLeastSigned(minV)
	}
	return intAtMostSigned(maxV)
}

// digitRange is the class [from-to] (or [from] when they are equal).
func digitRange(from, to byte) Expr {
	if from == to {
		return Class(string(from))
	}
	return Class(string(from) + "-" + string(to))
}

// moreDigits is minD to maxD digits (maxD math.MaxInt: unbounded).
func moreDigits(minD, maxD int) Expr {
	if maxD == math.MaxInt {
		maxD = -1
	}
	return rep(Class("0-9"), minD, maxD)
}

// anyDigits is an integer of 1 to intDecimalsLeft digits, without a
// leading zero (zero itself aside).
func anyDigits() Expr { return Seq(Class("1-9"), moreDigits(0, intDecimalsLeft-1)) }

// negated is "-" and then e.
func negated(e Expr) Expr { return Seq(Lit("-"), paren(e)) }

// uniformRange is the numbers from..to, both of the same digit count.
func uniformRange(from, to string) Expr {
	i := 0
	for i < len(from) && i < len(to) && from[i] == to[i] {
		i++
	}
	prefix := Lit(from[:i])
	if i >= len(from) || i >= len(to) {
		return prefix
	}
	if len(from)-i-1 > 0 {
		return Seq(prefix, splitRange(from, to, i))
	}
	return Seq(prefix, Class(from[i:i+1]+"-"+to[i:i+1]))
}

// splitRange is uniformRange's alternatives from the first digit i where
// from and to differ, with digits left after it.
func splitRange(from, to string, i int) Expr {
	subLen := len(from) - i - 1
	fromSub, toSub := from[i+1:], to[i+1:]
	zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
	toReached := false
	var out []Expr
	if fromSub == zeros {
		out = append(out, Seq(digitRange(from[i], to[i]-1), moreDigits(subLen, subLen)))
	} else {
		out = append(out, Seq(Class(from[i:i+1]), paren(uniformRange(fromSub, nines))))
		if from[i] < to[i]-1 {
			last := to[i] - 1
			if toSub == nines {
				last, toReached = to[i], true
			}
			out = append(out, Seq(digitRange(from[i]+1, last), moreDigits(subLen, subLen)))
		}
	}
	if !toReached {
		out = append(out, Seq(digitRange(to[i], to[i]), uniformRange(zeros, toSub)))
	}
	return paren(alts(out...))
}

// intBounded is the integers in minV..maxV.
func intBounded(minV, maxV int64) Expr {
	if minV < 0 && maxV < 0 {
		return negated(intRange(-maxV, -minV))
	}
	var out []Expr
	if minV < 0 {
		out = append(out, negated(intRange(1, -minV))) // llama.cpp allows "-0" here
		minV = 0
	}
	minS, maxS := strconv.FormatInt(minV, 10), strconv.FormatInt(maxV, 10)
	for digits := len(minS); digits < len(maxS); digits++ {
		out = append(out, uniformRange(minS, strings.Repeat("9", digits)))
		minS = "1" + strings.Repeat("0", digits)
	}
	return alts(append(out, uniformRange(minS, maxS))...)
}

// One side bounded: llama.cpp's recursion here loses the digit count of
// the rest (minimum 100 let "10" through), so these are written directly.

// intAtLeast is the integers >= m (m >= 0), without sign.
func intAtLeast(m int64) Expr {
	ms := strconv.FormatInt(m, 10)
	if m == 0 {
		return alts(Class("0"), anyDigits())
	}
	r := uniformRange(ms, strings.Repeat("9", len(ms)))
	if len(ms) < intDecimalsLeft {
		r = alts(r, Seq(Class("1-9"), moreDigits(len(ms), intDecimalsLeft-1)))
	}
	return r
}

// intAtLeastSigned is the integers >= minV.
func intAtLeastSigned(minV int64) Expr {
	if minV >= 0 {
		return intAtLeast(minV)
	}
	return alts(negated(intRange(1, -minV)), Class("0"), anyDigits())
}

// intAtMostSigned is the integers <= maxV.
func intAtMostSigned(maxV int64) Expr {
	if maxV >= 0 {
		return alts(Seq(Lit("-"), anyDigits()), intRange(0, maxV))
	}
	return negated(intAtLeast(-maxV))
}
