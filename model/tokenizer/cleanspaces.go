package tokenizer

// spaceCleaner is llama.cpp's clean_up_tokenization_spaces (the three passes
// at the end of llama_vocab::impl::detokenize) as a stream: bytes go in as
// they are decoded, and only bytes whose fate is settled come out, so
// cleaning piecewise gives what cleaning the whole text gives.
//
//	pass 1: " ?", " !", " .", " ,"  lose the space
//	pass 2: " ' "                   loses both spaces
//	pass 3: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it)
//
// Each pass holds back at most three bytes it cannot decide on yet; flush
// releases them as llama.cpp treats the end of the text. The zero value is
// ready to use.
type spaceCleaner struct {
	p1  cleanPunct
	p2  cleanQuote
	p3  cleanContraction
	tmp [2][]byte
}

// write cleans in and appends the settled bytes to out.
func (c *spaceCleaner) write(in, out []byte) []byte {
	c.tmp[0] = c.p1.write(in, c.tmp[0][:0])
	c.tmp[1] = c.p2.write(c.tmp[0], c.tmp[1][:0])
	return c.p3.write(c.tmp[1], out)
}

// flush ends the text: held bytes are appended to out and c is as new.
func (c *spaceCleaner) flush(out []byte) []byte {
	c.tmp[0] = c.p1.flush(c.tmp[0][:0])
	c.tmp[1] = c.p2.flush(c.p2.write(c.tmp[0], c.tmp[1][:0]))
	return c.p3.flush(c.p3.write(c.tmp[1], out))
}

// cleanPunct is pass 1. It holds a space until the next byte is known.
type cleanPunct struct{ space bool }

func (p *cleanPunct) write(in, out []byte) []byte {
	for _, b := range in {
		if p.space {
			p.space = false
			if b != '?' && b != '!' && b != '.' && b != ',' {
				out = append(out, ' ')
			}
		}
		if b == ' ' {
			p.space = true
		} else {
			out = append(out, b)
		}
	}
	return out
}

func (p *cleanPunct) flush(out []byte) []byte {
	if p.space {
		out = append(out, ' ')
	}
	*p = cleanPunct{}
	return out
}

// cleanQuote is pass 2; held is 0 (nothing), 1 (" ") or 2 (" '").
type cleanQuote struct{ held int }

func (p *cleanQuote) write(in, out []byte) []byte {
	for _, b := range in {
		switch p.held {
		case 0:
			if b == ' ' {
				p.held = 1
			} else {
				out = append(out, b)
			}
		case 1:
			switch b {
			case '\'':
				p.held = 2
			case ' ':
				out = append(out, ' ')
			default:
				out = append(out, ' ', b)
				p.held = 0
			}
		case 2:
			// The second space is consumed, so it cannot start another " ' ".
			if b == ' ' {
				out = append(out, '\'')
			} else {
				out = append(out, ' ', '\'', b)
			}
			p.held = 0
		}
	}
	return out
}

func (p *cleanQuote) flush(out []byte) []byte {
	out = append(out, " '"[:p.held]...)
	*p = cleanQuote{}
	return out
}

// cleanContraction is pass 3; held is 0 (nothing), 1 (" "), 2 (" '") or 3
// (" '" and x1, an 'r' or 'v' waiting for an 'e').
type cleanContraction struct {
	held int
	x1   byte
}

func (p *cleanContraction) write(in, out []byte) []byte {
	for _, b := range in {
		out = p.put(b, out)
	}
	return out
}

func (p *cleanContraction) put(b byte, out []byte) []byte {
	switch p.held {
	case 1:
		switch b {
		case '\'':
			p.held = 2
			return out
		case ' ':
			return append(out, ' ')
		}
		p.held = 0
		return append(out, ' ', b)
	case 2:
		switch b {
		case 's', 'm':
			p.held = 0
			return append(out, '\'', b)
		case 'r', 'v':
			p.held, p.x1 = 3, b
			return out
		}
		p.held = 0
		return p.put(b, append(out, ' ', '\''))
	case 3:
		p.held = 0
		if b == 'e' {
			return append(out, '\'', p.x1, 'e')
		}
		return p.put(b, append(out, ' ', '\'', p.x1))
	}
	if b == ' ' {
		p.held = 1
		return out
	}
	return append(out, b)
}

func (p *cleanContraction) flush(out []byte) []byte {
	switch p.held {
	case 1:
		out = append(out, ' ')
	case 2:
		out = append(out, ' ', '\'')
	case 3:
		out = append(out, ' ', '\'', p.x1)
	}
	*p = cleanContraction{}
	return out
}
