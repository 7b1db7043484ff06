package sample

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// mirostatGolden are the tokens llama.cpp b10573 draws: a chain of
// llama_sampler_init_temp(0.8) and llama_sampler_init_mirostat(1000, seed,
// 5, 0.1, 100) (v1) or llama_sampler_init_mirostat_v2(seed, 3, 0.2) (v2),
// applied to 40 rows of mirostatLogits (band: with banned tokens), printed
// by a small C++ program linked against libllama.
var mirostatGolden = map[string]string{
	"v1 band0 seed 0":     "813 37 629 313 819 503 3 776 273 951 807 491 715 660 979 289 240 817 955 805 483 971 192 226 79 24 58 362 218 157 918 35 707 465 766 978 279 942 142 360",
	"v1 band0 seed 42":    "718 319 86 227 911 141 365 865 92 494 724 123 430 31 878 927 148 99 501 808 210 431 180 502 174 932 877 629 580 154 188 130 799 456 947 886 371 307 516 84",
	"v1 band0 seed 12345": "169 865 549 313 92 488 184 586 273 681 80 221 534 847 519 835 780 369 41 357 661 879 284 226 901 475 696 362 215 249 731 673 612 278 309 337 638 669 513 544",
	"v1 band1 seed 0":     "813 491 629 40 727 503 3 776 273 951 169 491 715 568 979 562 875 363 955 440 756 517 100 499 352 659 331 908 218 157 918 943 707 465 39 978 279 215 596 360",
	"v1 band1 seed 42":    "718 592 86 227 365 141 365 138 92 494 632 123 611 758 694 927 691 99 501 354 483 431 631 502 174 840 150 721 307 427 461 765 799 275 855 159 371 307 516 357",
	"v1 band1 seed 12345": "169 865 549 313 546 215 911 583 546 681 896 221 534 574 792 835 320 188 133 357 207 152 11 499 901 837 696 635 215 249 4 308 885 551 398 429 184 396 513 544",
	"v2 band0 seed 0":     "997 589 546 957 822 141 95 49 365 408 359 402 353 393 71 565 605 188 501 719 848 793 830 956 82 208 242 184 491 68 464 403 526 11 131 524 98 580 970 998",
	"v2 band0 seed 42":    "632 865 546 503 368 687 822 503 638 862 997 583 988 31 706 565 332 99 501 265 121 431 465 48 447 662 515 638 672 249 645 222 799 100 585 251 371 126 608 452",
	"v2 band0 seed 12345": "813 138 549 411 822 230 822 138 365 954 359 221 353 212 979 565 240 280 136 357 29 520 103 956 447 389 515 184 399 341 99 949 161 373 312 159 733 307 516 817",
	"v2 band1 seed 0":     "997 770 546 957 95 141 95 49 638 408 994 402 353 847 71 565 513 461 501 900 121 793 830 956 355 935 242 184 491 68 464 676 526 11 131 524 98 580 970 271",
	"v2 band1 seed 42":    "632 865 546 503 368 687 822 230 911 862 905 856 988 758 706 565 967 99 501 992 121 431 646 48 447 935 515 638 399 522 645 222 799 100 585 251 371 853 608 452",
	"v2 band1 seed 12345": "813 138 549 411 95 230 822 592 365 227 721 221 353 939 979 565 148 280 136 357 302 793 103 956 447 389 515 184 126 341 99 676 434 373 312 159 733 34 789 817",
}

// mirostatLogits is row t of the golden test's logits over 1000 tokens:
// r*r/50000 - 10 for r a permutation of 0..999 that changes with t, so no
// two logits tie (llama.cpp's order of tied tokens is unspecified); with
// band, every third row bans the tokens i = 3 mod 7.
func mirostatLogits(t uint32, band bool) []float32 {
	l := make([]float32, 1000)
	for i := range l {
		r := (uint32(i)*337 + t*491 + (t*t)%1000) % 1000
		l[i] = float32(r*r)/50000 - 10
		if band && t%3 == 1 && i%7 == 3 {
			l[i] = float32(math.Inf(-1))
		}
	}
	return l
}

// TestMirostatMatchesLlamaCpp: both versions draw llama.cpp's tokens on
// three seeds, mu carrying over from draw to draw, whether the runtime
// seeks each draw (as the device actor does) or not.
func TestMirostatMatchesLlamaCpp(t *testing.T) {
	for _, ver := range []int{1, 2} {
		for _, band := range []bool{false, true} {
			for _, seed := range []uint64{0, 42, 12345} {
				name := fmt.Sprintf("v%d band%d seed %d", ver, map[bool]int{false: 0, true: 1}[band], seed)
				for _, seek := range []bool{false, true} {
					p := Params{Temperature: 0.8, Mirostat: ver, MirostatTau: 5, MirostatEta: 0.1, Seed: seed, HasSeed: true,
						TopK: 40, TopP: 0.9, RepetitionPenalty: 1.5} // ignored under mirostat, as llama-server does
					if ver == 2 {
						p.MirostatTau, p.MirostatEta = 3, 0.2
					}
					s := mustNew(t, p)
					var got []string
					history := []int32{1, 2, 3}
					for step := range uint32(40) {
						if seek {
							s.Seek(seed, uint64(step))
						}
						tok, err := s.Sample(mirostatLogits(step, band), history)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, fmt.Sprint(tok.ID))
						history = append(history, tok.ID)
					}
					if g := strings.Join(got, " "); g != mirostatGolden[name] {
						t.Errorf("%s (seek %v):\n got %s\nwant %s", name, seek, g, mirostatGolden[name])
					}
				}
			}
		}
	}
}
