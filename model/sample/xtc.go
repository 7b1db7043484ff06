package sample

// XTC ("exclude top choices") draws its coin from its own random stream,
// as llama.cpp's: a std::mt19937 seeded with the request's seed (as a
// uint32), read through std::uniform_real_distribution<float>(0, 1), which
// in libstdc++ is one 32-bit output divided by 2^32 in float. The same seed
// therefore flips the same coins as llama-server's XTC. (The final draw
// uses troupe's own generator, not llama.cpp's, so the token picked from
// the survivors can still differ.)

// mt19937 is the 32-bit Mersenne Twister, std::mt19937.
type mt19937 struct {
	mt  [624]uint32
	idx int
}

func (m *mt19937) seed(s uint32) {
	m.mt[0] = s
	for i := 1; i < 624; i++ {
		prev := m.mt[i-1]
		m.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.idx = 624
}

func (m *mt19937) next() uint32 {
	if m.idx >= 624 {
		m.twist()
	}
	y := m.mt[m.idx]
	m.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

func (m *mt19937) twist() {
	for i := 0; i < 624; i++ {
		y := m.mt[i]&0x80000000 | m.mt[(i+1)%624]&0x7fffffff
		v := m.mt[(i+397)%624] ^ y>>1
		if y&1 != 0 {
			v ^= 0x9908b0df
		}
		m.mt[i] = v
	}
	m.idx = 0
}

// xtcCoin is XTC's stream: coin number pos comes next.
type xtcCoin struct {
	rng    mt19937
	seed   uint32
	pos    uint64
	seeded bool
	want   uint64 // the coin Seek asked for
	sought bool
}

// seek makes the next coin the draw'th of the stream seeded with seed.
func (x *xtcCoin) seek(seed uint32, draw uint64) {
	if seed != x.seed {
		x.seed, x.seeded = seed, false
	}
	x.want, x.sought = draw, true
}

// coin returns the next coin in [0, 1), as llama.cpp's
// uniform_real_distribution<float>(0, 1) over mt19937.
func (x *xtcCoin) coin() float32 {
	if !x.seeded || (x.sought && x.want < x.pos) {
		x.rng.seed(x.seed)
		x.pos, x.seeded = 0, true
	}
	if x.sought {
		for x.pos < x.want {
			x.rng.next()
			x.pos++
		}
		x.sought = false
	}
	x.pos++
	f := float32(x.rng.next()) / 4294967296
	if f >= 1 {
		f = 0.99999994 // nextafter(1, 0), as generate_canonical
	}
	return f
}
