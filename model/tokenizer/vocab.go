package tokenizer

// TokenType is a vocabulary entry's kind, with llama.cpp's values
// (tokenizer.ggml.token_type).
type TokenType int32

const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Vocab is everything a tokenizer needs, read from a GGUF file's
// tokenizer.ggml.* keys or from a Hugging Face tokenizer.json. It is plain
// data; New builds a Tokenizer from it.
type Vocab struct {
	// Model is the tokenizer family, with GGUF's names: "llama" (SentencePiece
	// with scores and byte fallback), "gpt2" (byte-level BPE with merges),
	// "bert" (WordPiece).
	Model string
	// Pre selects the BPE pre-tokenizer (tokenizer.ggml.pre): "default",
	// "llama-bpe", "qwen2", "smollm", "starcoder", "gpt-2", ...
	Pre string

	Tokens []string    // (n_vocab) token text, as stored (SentencePiece uses U+2581 for spaces, byte-level BPE its byte-to-rune map)
	Scores []float32   // (n_vocab) merge priority for SentencePiece; nil when absent
	Types  []TokenType // (n_vocab) nil when absent: every token normal
	Merges []string    // BPE merges "left right", highest priority first

	// Special token ids; -1 when the vocabulary has none.
	BOS, EOS, EOT, EOM, UNK, PAD, SEP, MASK, NL int32
	// EOG is the end-of-generation set: EOS, EOT, EOM and the tokens llama.cpp
	// recognises as ending a turn (<|eot_id|>, <|im_end|>, <|endoftext|>, ...).
	EOG []int32
	// FIM holds the fill-in-the-middle tokens, as llama.cpp reads them.
	FIM FIMTokens

	AddBOS                  bool // prepend BOS when encoding with special tokens
	AddEOS                  bool // append EOS when encoding with special tokens
	AddSpacePrefix          bool // SentencePiece: prepend a space to the text (llama.cpp's default when the key is absent is true)
	IgnoreMerges            bool // BPE: a pre-token that is itself a token is taken whole (Llama 3)
	CleanSpaces             bool // decoding: clean_up_tokenization_spaces
	RemoveExtraWhitespaces  bool // SentencePiece normalizer option
	EscapeWhitespaces       bool // SentencePiece: spaces become U+2581 (default true)
	TreatWhitespaceAsSuffix bool

	// ChatTemplate is the Jinja chat template shipped with the vocabulary, if any.
	ChatTemplate string

	// PreRegexes, when set, replace the pre-tokenizer Pre names: the
	// tokenizer.json Split patterns (in order) of a pre-tokenizer that matches
	// no llama.cpp pre type, run over the text's code points as Hugging Face
	// runs them.
	PreRegexes []string

	// Strip is, per token, the whitespace that special-token partitioning
	// removes around each occurrence of that token in the text (llama.cpp's
	// LSTRIP/RSTRIP attributes, tokenizer.json's lstrip/rstrip); nil: none.
	Strip []Strip
	// AddSEP: append SEP when encoding with special tokens (BERT-style
	// models; llama.cpp's add_sep).
	AddSEP bool
	// Lowercase and StripAccents are the WordPiece normalizer options
	// (tokenizer.ggml.normalizer.*; llama.cpp's defaults are true, true).
	Lowercase    bool
	StripAccents bool
}

// Strip is a set of sides on which a special token swallows whitespace.
type Strip uint8

const (
	StripLeft  Strip = 1 << iota // remove whitespace before the token
	StripRight                   // remove whitespace after the token
)

// FIMTokens are a vocabulary's fill-in-the-middle tokens: from the GGUF keys
// tokenizer.ggml.fim_{pre,suf,mid,pad,rep,sep}_token_id (and the older
// prefix/suffix/middle_token_id), else found by their text as llama.cpp's
// vocabulary load does (<|fim_prefix|>, <fim-prefix>, <PRE>, ...). Each is
// -1 when the vocabulary has none; a vocabulary not read by FromGGUF or
// FromHFFiles has the zero value, for which Infill is false.
type FIMTokens struct {
	Pre, Suf, Mid, Pad, Rep, Sep int32
	// Set is true once the ids were looked for (by FromGGUF, FromHFFiles).
	Set bool
}

// Infill reports whether the vocabulary can fill in the middle: it has the
// prefix, suffix and middle tokens.
func (f FIMTokens) Infill() bool { return f.Set && f.Pre >= 0 && f.Suf >= 0 && f.Mid >= 0 }
