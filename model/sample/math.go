package sample

import "math"

// Argmax returns the index of the largest logit, the lowest index on ties.
// NaNs are skipped; it returns 0 when every logit is NaN or -Inf, and -1 for
// an empty slice.
func Argmax(logits []float32) int32 {
	if len(logits) == 0 {
		return -1
	}
	best, idx := float32(math.Inf(-1)), 0
	for i, x := range logits {
		if x > best {
			best, idx = x, i
		}
	}
	return int32(idx)
}

// LogSoftmax writes log(softmax(logits)) into dst: dst[i] = logits[i] -
// log(sum_j exp(logits[j])). dst may be logits itself. -Inf logits give -Inf.
// It panics unless len(dst) == len(logits). The sum is taken in float64
// after subtracting the maximum, so large logits do not overflow.
func LogSoftmax(dst, logits []float32) {
	if len(dst) != len(logits) {
		panic("sample: LogSoftmax: len(dst) != len(logits)")
	}
	if len(logits) == 0 {
		return
	}
	lse := logSumExp(logits, logits[Argmax(logits)])
	for i, x := range logits {
		dst[i] = float32(float64(x) - lse)
	}
}

// logSumExp returns log(sum_i exp(logits[i])) given max, the largest logit
// (finite).
func logSumExp(logits []float32, max float32) float64 {
	var sum float64
	for _, x := range logits {
		sum += expNeg(float64(x - max))
	}
	return float64(max) + math.Log(sum)
}

// checkedArgmax is Argmax for Sample: it returns the index of the largest
// logit (lowest on ties), and bad >= 0, the index of the first NaN or +Inf
// logit, if there is one.
func checkedArgmax(logits []float32) (idx, bad int) {
	best := float32(math.Inf(-1))
	for i, x := range logits {
		if x > best {
			best, idx = x, i
		} else if x != x {
			return 0, i
		}
	}
	if math.IsInf(float64(best), 1) {
		return 0, idx
	}
	return idx, -1
}

// expNeg returns e^x for x <= 0 (x may be -Inf) with a relative error below
// 1e-8: enough for probabilities kept as float32, and cheaper than math.Exp
// because it is inlined. It splits y = x*log2(e) into an integer n and a
// remainder |f| <= 1/2, takes 2^f = e^(f ln2) from its Taylor series to the
// 7th power (error under (ln2/2)^8/8! < 6e-9), and scales by 2^n, whose
// exponent bits are n's low bits in t. Results below e^-700 flush to zero.
func expNeg(x float64) float64 {
	const (
		shift = 0x1.8p52 // adding it rounds to an integer, kept in the low bits
		c1    = math.Ln2
		c2    = c1 * math.Ln2 / 2
		c3    = c2 * math.Ln2 / 3
		c4    = c3 * math.Ln2 / 4
		c5    = c4 * math.Ln2 / 5
		c6    = c5 * math.Ln2 / 6
		c7    = c6 * math.Ln2 / 7
	)
	if x < -700 {
		return 0
	}
	// Explicit conversions: no fused multiply-add, as amd64 computes it.
	y := float64(x * math.Log2E)
	t := y + shift
	f := y - (t - shift)
	p := 1 + float64(f*(c1+float64(f*(c2+float64(f*(c3+float64(f*(c4+float64(f*(c5+float64(f*(c6+float64(f*c7)))))))))))))
	return p * math.Float64frombits(math.Float64bits(t)<<52+1023<<52)
}
