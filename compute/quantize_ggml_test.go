package compute

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"testing"
)

// quantizerInput is the test input of TestQuantizeRowGGML: rows rows of k
// values from a seeded generator, in four distributions (small normal,
// normal at scales 1e-3..1e3, skewed uniform, sparse), then edge rows: all
// zero, one huge outlier among small values, magnitudes near 1e-30, all
// negative, and a constant row.
func quantizerInput() (x []float32, k, rows int) {
	const n = 64
	k, rows = 2048, n+5
	x = make([]float32, k*rows)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range k * n {
		r := i / k
		switch r % 4 {
		case 0:
			x[i] = float32(rng.NormFloat64() * 0.02)
		case 1:
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(r%7-3)))
		case 2:
			x[i] = float32(rng.Float64()*2 - 0.3)
		case 3:
			if rng.IntN(5) == 0 {
				x[i] = float32(rng.NormFloat64())
			}
		}
	}
	edge := x[k*n:]
	// row n: all zero
	for i := range k {
		edge[k+i] = float32(rng.NormFloat64() * 0.01)
		edge[2*k+i] = float32(rng.NormFloat64() * 1e-30)
		edge[3*k+i] = -abs32(float32(rng.NormFloat64()))
		edge[4*k+i] = 0.25
	}
	edge[k+100] = 1e4
	return x, k, rows
}

// TestQuantizeRowGGML checks troupe's quantizers against ggml's: the sha256
// of the quantized test input equals that of ggml_quantize_chunk's output
// (llama.cpp b10573's libggml-base, no importance matrix) on the same input.
func TestQuantizeRowGGML(t *testing.T) {
	want := map[DType]string{
		F16:  "91edc551ca23cb0e195f0c712d01e43a18acb4fd2ccccbbff84cccabeed6e28a",
		BF16: "ec2f28221755a6099be1e2adf16d44720617550c3b06754fa51a7f9aa8f69c5b",
		Q8_0: "ba11b8420c8f75369cf5d60ad691aee045723f209ca663b52a9bf787eaaf734f",
		Q4_0: "09f39ef6f5067179fa12e086d13e5a68b0c644949552e549935efb07d57867da",
		Q5_0: "8a32d4d8000899ab2ee115e326db70595b92d07fd77b724bd7b0efa0445e2dfc",
		Q5_1: "151cedfca7b1249c8db6287ae1870f04e5e6044deda16a058bd2524fefad468a",
		Q4_K: "202200ae0c946355bc4a2552bb843f0080929657d32b0e0b7a3d2037d51a1b92",
		Q5_K: "6ac75832da87f57865b244a94b5a764fd282e26fc4685733c42666a6cab7b548",
		Q6_K: "26145244a010e5fc42bf8ec897c57b366a3d22cc913c5b91e1f11c8626986a1e",

		IQ4_NL: "dff1c3590b89f8afb456052efaadcdf295ae442890e49342b237890311bc03ef",
		IQ4_XS: "fc78c096446e9a17dce77438929c035b8d34c9e392359764e3a3aa20b9f3d041",
	}
	x, k, rows := quantizerInput()
	for typ, sum := range want {
		rs, err := typ.RowSize(k)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, rs*rows)
		for r := range rows {
			if err := QuantizeRow(typ, x[r*k:(r+1)*k], out[r*rs:(r+1)*rs]); err != nil {
				t.Fatal(err)
			}
		}
		if got := sha256.Sum256(out); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%v: sha256 %x, ggml's %s", typ, got, sum)
		}
	}
}
