package tokenizer

// llama.cpp's hand-written pre-tokenizer splitters (unicode.cpp:
// unicode_regex_split_custom_gpt2 and _llama3), which stand in for the GPT-2
// and Llama 3 regexes. Both walk the segments made by earlier splitters and
// cut each one further; a split returns the new segment lengths, in code
// points.

// splitText is the text being pre-tokenized: its code points and their flags.
type splitText struct {
	cpts  []rune
	flags []cptFlags
}

// splitter cuts each segment of t (lengths in code points, in order) into
// smaller ones, appending their lengths to out.
type splitter interface {
	split(t *splitText, segs, out []int) []int
}

const outOfRange rune = -1

// segCursor reads one segment [ini, end) of a splitText; reads outside it give
// outOfRange and no flags, as llama.cpp's _get_cpt and _get_flags do.
type segCursor struct {
	t        *splitText
	ini, end int
	prev     int // end of the last piece emitted
	out      []int
}

func (c *segCursor) cpt(p int) rune {
	if p >= c.ini && p < c.end {
		return c.t.cpts[p]
	}
	return outOfRange
}

func (c *segCursor) flags(p int) cptFlags {
	if p >= c.ini && p < c.end {
		return c.t.flags[p]
	}
	return 0
}

// add emits the piece ending at end, if not empty, and returns its length.
func (c *segCursor) add(end int) int {
	n := end - c.prev
	if n > 0 {
		c.out = append(c.out, n)
	}
	c.prev = end
	return n
}

// contraction returns the length of 's 't 're 've 'm 'll 'd at p, 0 if none;
// fold lowers the letters first (Llama 3's (?i:...)).
func (c *segCursor) contraction(p int, fold bool) int {
	if c.cpt(p) != '\'' || p+1 >= c.end {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return toLowerCpt(r)
		}
		return r
	}
	next := lower(c.cpt(p + 1))
	if next == 's' || next == 't' || next == 'm' || next == 'd' {
		return 2
	}
	if p+2 < c.end {
		nn := lower(c.cpt(p + 2))
		if next == 'r' && nn == 'e' || next == 'v' && nn == 'e' || next == 'l' && nn == 'l' {
			return 3
		}
	}
	return 0
}

// whitespace handles the trailing alternatives \s+(?!\S)|\s+ at pos and
// returns the new position, or pos itself when there is no whitespace.
func (c *segCursor) whitespace(pos, n int) int {
	if n > 1 && c.cpt(pos+n) != outOfRange {
		pos += n - 1
		c.add(pos)
		return pos
	}
	if n > 0 {
		pos += n
		c.add(pos)
	}
	return pos
}

// gpt2Split is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
type gpt2Split struct{}

func (gpt2Split) split(t *splitText, segs, out []int) []int {
	c := segCursor{t: t, out: out}
	for _, segLen := range segs {
		c.ini, c.end, c.prev = c.end, c.end+segLen, c.end
		for pos := c.ini; pos < c.end; {
			cpt, f := c.cpt(pos), c.flags(pos)
			if n := c.contraction(pos, false); n > 0 {
				pos += c.add(pos + n)
				continue
			}
			f2 := f
			if cpt == ' ' {
				f2 = c.flags(pos + 1)
			}
			if class := f2 & (cptLetter | cptNumber); class != 0 { // ' ?\p{L}+' or ' ?\p{N}+'
				if cpt == ' ' {
					pos++
				}
				for f2&class != 0 {
					pos++
					f2 = c.flags(pos)
				}
				c.add(pos)
				continue
			}
			if f2&(cptWhitespace|cptLetter|cptNumber) == 0 && f2 != 0 { // ' ?[^\s\p{L}\p{N}]+'
				if cpt == ' ' {
					pos++
				}
				for f2&(cptWhitespace|cptLetter|cptNumber) == 0 && f2 != 0 {
					pos++
					f2 = c.flags(pos)
				}
				c.add(pos)
				continue
			}
			if next := c.whitespace(pos, c.spaces(pos)); next != pos {
				pos = next
				continue
			}
			pos++
			c.add(pos)
		}
	}
	return c.out
}

func (c *segCursor) spaces(pos int) int {
	n := 0
	for c.flags(pos+n)&cptWhitespace != 0 {
		n++
	}
	return n
}

// llama3Split is (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ with digits 3. With
// digits 1 it is Qwen2's pattern (\p{N} alone), which llama.cpp runs through
// std::regex instead; TestBPEQwen2Split checks that the two agree.
type llama3Split struct{ digits int }

func (s llama3Split) split(t *splitText, segs, out []int) []int {
	c := segCursor{t: t, out: out}
	for _, segLen := range segs {
		c.ini, c.end, c.prev = c.end, c.end+segLen, c.end
		for pos := c.ini; pos < c.end; {
			cpt, f := c.cpt(pos), c.flags(pos)
			if n := c.contraction(pos, true); n > 0 {
				pos += c.add(pos + n)
				continue
			}
			if !(cpt == '\r' || cpt == '\n' || f&cptNumber != 0) && (f&cptLetter != 0 || c.flags(pos+1)&cptLetter != 0) {
				pos++
				for c.flags(pos)&cptLetter != 0 {
					pos++
				}
				c.add(pos)
				continue
			}
			if f&cptNumber != 0 { // \p{N}{1,digits}
				ini := pos
				for c.flags(pos)&cptNumber != 0 {
					if pos++; pos-ini >= s.digits {
						c.add(pos)
						ini = pos
					}
				}
				c.add(pos)
				continue
			}
			f2 := f
			if cpt == ' ' {
				f2 = c.flags(pos + 1)
			}
			// llama.cpp tests the current flags (f) for "any category" here, not f2.
			if f2&(cptWhitespace|cptLetter|cptNumber) == 0 && f != 0 {
				if cpt == ' ' {
					pos++
				}
				for f2&(cptWhitespace|cptLetter|cptNumber) == 0 && f2 != 0 {
					pos++
					f2 = c.flags(pos)
				}
				for r := c.cpt(pos); r == '\r' || r == '\n'; r = c.cpt(pos) {
					pos++
				}
				c.add(pos)
				continue
			}
			n, lastNL := 0, 0
			for c.flags(pos+n)&cptWhitespace != 0 {
				if r := c.cpt(pos + n); r == '\r' || r == '\n' {
					lastNL = pos + n + 1
				}
				n++
			}
			if lastNL > 0 { // \s*[\r\n]+
				pos = lastNL
				c.add(pos)
				continue
			}
			if next := c.whitespace(pos, n); next != pos {
				pos = next
				continue
			}
			pos++
			c.add(pos)
		}
	}
	return c.out
}
