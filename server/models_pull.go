package server

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Resolving hf.co/OWNER/REPO[:TAG] names as Ollama's Hugging Face
// integration does: TAG is a quantization (Q4_K_M, q8_0, IQ4_XS, F16,
// UD-Q4_K_XL …, any case) matched against the quant in the repository's
// .gguf file names.

// defaultQuants is the order in which a name without a tag (or with
// "latest") picks a file: Q4_K_M as Ollama and llama-server do, else the
// nearest 4-bit quants, then larger ones up to the unquantized; a repository
// with none of them gives its first GGUF by name.
var defaultQuants = []string{"Q4_K_M", "Q4_K_S", "Q4_0", "IQ4_XS", "IQ4_NL", "Q4_K_L", "Q5_K_M", "Q5_K_S", "Q5_0",
	"Q6_K", "Q8_0", "BF16", "F16", "F32"}

// quantToken is a quantization as GGUF file names write it.
var quantToken = regexp.MustCompile(`(?i)^(I?Q[1-8](_[A-Z0-9]+)*|TQ[12]_0|BF16|F16|FP16|F32|FP32|MXFP4(_MOE)?)$`)

// splitPart is the -00001-of-00003 suffix of a split GGUF's parts.
var splitPart = regexp.MustCompile(`-(\d{5})-of-(\d{5})$`)

// ggufFile is one .gguf file of a repository, as the chooser sees it.
type ggufFile struct {
	name  string // path in the repository
	quant string // "" when the name has none
	parts int    // a split file's part count (name is its first part); 1 otherwise
}

// quantOf is the quantization in a .gguf file's name (the last token that
// reads as one, tokens split at "-" and "."; "model_Q4_K_M" works too), with
// unsloth's "UD-" prefix kept; "" when there is none.
func quantOf(stem string) string {
	toks := strings.FieldsFunc(stem, func(r rune) bool { return r == '-' || r == '.' })
	for i := len(toks) - 1; i >= 0; i-- {
		t := toks[i]
		for j := 0; j < len(t); j++ {
			if j > 0 && t[j-1] != '_' {
				continue
			}
			if quantToken.MatchString(t[j:]) {
				q := strings.ToUpper(t[j:])
				if j == 0 && i > 0 && strings.EqualFold(toks[i-1], "UD") {
					q = "UD-" + q
				}
				return q
			}
		}
	}
	return ""
}

// ggufFiles sorts a repository's files into its models: .gguf files other
// than projectors (mmproj) and split parts after the first; projectors
// returns the mmproj files.
func ggufFiles(files []string) (models []ggufFile, projectors []string) {
	for _, f := range files {
		base := path.Base(f)
		if !strings.HasSuffix(strings.ToLower(base), ".gguf") {
			continue
		}
		if strings.Contains(strings.ToLower(base), "mmproj") {
			projectors = append(projectors, f)
			continue
		}
		stem := base[:len(base)-len(".gguf")]
		g := ggufFile{name: f, parts: 1}
		if m := splitPart.FindStringSubmatch(stem); m != nil {
			if m[1] != "00001" {
				continue
			}
			fmt.Sscan(m[2], &g.parts)
			stem = stem[:len(stem)-len(m[0])]
		}
		g.quant = quantOf(stem)
		models = append(models, g)
	}
	slices.SortFunc(models, func(a, b ggufFile) int { return strings.Compare(a.name, b.name) })
	slices.Sort(projectors)
	return models, projectors
}

// chooseProjector picks the projector among a repository's (or a
// directory's) mmproj files, sorted: the F16 one, as llama-server's -hf
// does, else the first; "" when there is none.
func chooseProjector(projectors []string) string {
	for _, p := range projectors {
		stem := strings.TrimSuffix(path.Base(p), path.Ext(p))
		if q := quantOf(stem); q == "F16" || q == "FP16" {
			return p
		}
	}
	if len(projectors) > 0 {
		return projectors[0]
	}
	return ""
}

// ChooseProjector is chooseProjector for serve's hub models (-m
// hf://OWNER/REPO/FILE.gguf): the mmproj GGUF among a repository's files,
// "" when it has none.
func ChooseProjector(files []string) string {
	_, projectors := ggufFiles(files)
	return chooseProjector(projectors)
}

// chooseGGUF picks the file of repo (a name for errors) that tag names
// among files, the repository's listing: "" or "latest" picks by
// defaultQuants. Errors are the user's: no GGUF in the repository, no file
// of that quant (listing those there are), several files of it, or a
// split file (not supported).
func chooseGGUF(repo string, files []string, tag string) (string, error) {
	models, _ := ggufFiles(files)
	if len(models) == 0 {
		return "", fmt.Errorf("%s has no GGUF file (this server pulls GGUF models; a safetensors repository is served with `troupe serve -m hf://OWNER/REPO`)", repo)
	}
	var pick []ggufFile
	if tag == "" || strings.EqualFold(tag, "latest") {
		for _, q := range defaultQuants {
			if pick = ofQuant(models, q); len(pick) > 0 {
				break
			}
		}
		if len(pick) == 0 {
			pick = models[:1]
		}
	} else if pick = ofQuant(models, tag); len(pick) == 0 {
		return "", fmt.Errorf("%s has no %s file; its quants: %s", repo, tag, strings.Join(quants(models), ", "))
	}
	if len(pick) > 1 {
		names := make([]string, len(pick))
		for i, g := range pick {
			names[i] = g.name
		}
		return "", fmt.Errorf("%s has several %s files (%s): name one as hf.co/%s/FILE.gguf", repo, pick[0].quant, strings.Join(names, ", "), repo)
	}
	if g := pick[0]; g.parts > 1 {
		return "", fmt.Errorf("%s: %s is split in %d parts, which this server does not load; merge them with llama-gguf-split --merge, or pick another quant (%s)",
			repo, g.name, g.parts, strings.Join(quants(models), ", "))
	}
	return pick[0].name, nil
}

// ofQuant returns the models of quant q (any case; "Q4_K_XL" also finds
// unsloth's "UD-Q4_K_XL" when the repository has no plain one).
func ofQuant(models []ggufFile, q string) []ggufFile {
	var exact, ud []ggufFile
	for _, g := range models {
		switch {
		case strings.EqualFold(g.quant, q):
			exact = append(exact, g)
		case strings.EqualFold(g.quant, "UD-"+q):
			ud = append(ud, g)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return ud
}

// quants lists the models' quants once each, sorted; a file without one is
// listed by name.
func quants(models []ggufFile) []string {
	var out []string
	for _, g := range models {
		q := g.quant
		if q == "" {
			q = g.name
		}
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	slices.Sort(out)
	return out
}
