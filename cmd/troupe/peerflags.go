package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-llm/troupe/kv"
)

// Launch flags of llama-server and vLLM on `troupe serve`, so that an
// existing launch script runs: a flag whose meaning troupe has is an alias
// of troupe's flag (or a switch troupe always has on); a flag it does not
// have is a one-line usage error naming it and saying why, never
// accepted and ignored, nor "unknown flag". README.md's table "Peers'
// launch flags" lists them (checked by TestReadmePeerFlags).

// peerFlag is one of a peer's launch flags (under all its names).
type peerFlag struct {
	names []string // as the peer spells them: "--ctx-size", "-c"
	peer  string   // whose: "llama-server", "vLLM" or "llama-server/vLLM"
	// Exactly one of the three below:
	alias string                          // the troupe flag it is another name of
	on    bool                            // a switch troupe always has on: accepted, nothing to do
	value func(c *serveConfig) flag.Value // a flag with its own translation
	why   string                          // not supported: why, and what to use instead
}

// peerFlags are the known peer flags. Speculative decoding's flags
// (--model-draft, --draft-*) are registered where those are.
var peerFlags = []peerFlag{
	{names: []string{"--model"}, peer: "llama-server/vLLM", alias: "m"},
	{names: []string{"--ctx-size"}, peer: "llama-server", alias: "c"},
	{names: []string{"--max-model-len"}, peer: "vLLM", alias: "c"},
	{names: []string{"--threads"}, peer: "llama-server", alias: "t"},
	{names: []string{"--parallel", "-np"}, peer: "llama-server", alias: "max-num-seqs"},
	{names: []string{"--alias", "-a"}, peer: "llama-server", alias: "served-model-name"},
	{names: []string{"--chat-template-file"}, peer: "llama-server", alias: "chat-template"},
	{names: []string{"-s"}, peer: "llama-server", alias: "seed"},
	{names: []string{"--download-dir"}, peer: "vLLM", alias: "cache-dir"},
	{names: []string{"--no-enable-prefix-caching"}, peer: "vLLM", alias: "no-prefix-caching"},
	{names: []string{"--models-max"}, peer: "llama-server", alias: "max-loaded-models"},
	{names: []string{"--n-gpu-layers", "--gpu-layers", "-ngl"}, peer: "llama-server", value: func(c *serveConfig) flag.Value { return gpuLayersFlag{&c.Device} }},
	{names: []string{"--cache-type-k", "-ctk", "--cache-type-v", "-ctv"}, peer: "llama-server", value: func(c *serveConfig) flag.Value { return &kvTypesFlag{c: c} }},
	{names: []string{"--enable-prefix-caching"}, peer: "vLLM", value: func(c *serveConfig) flag.Value { return offFlag{&c.Runtime.NoPrefixCaching} }},

	{names: []string{"--jinja"}, peer: "llama-server", on: true},
	{names: []string{"--cont-batching", "-cb"}, peer: "llama-server", on: true},
	{names: []string{"--kv-unified", "-kvu"}, peer: "llama-server", on: true},
	{names: []string{"--metrics"}, peer: "llama-server", on: true},
	{names: []string{"--embedding", "--embeddings"}, peer: "llama-server", on: true},
	{names: []string{"--rerank", "--reranking"}, peer: "llama-server", on: true},
	{names: []string{"--enable-auto-tool-choice"}, peer: "vLLM", on: true},
	{names: []string{"--enable-chunked-prefill"}, peer: "vLLM", on: true},
	{names: []string{"--trust-remote-code"}, peer: "vLLM", on: true},

	{names: []string{"--flash-attn", "-fa"}, peer: "llama-server", why: "troupe chooses its attention kernels itself"},
	{names: []string{"--mlock"}, peer: "llama-server", why: "the model's pages are not locked in memory"},
	{names: []string{"--no-mmap"}, peer: "llama-server", why: "troupe always maps the model file (--no-repack reads every weight from the mapping)"},
	{names: []string{"--batch-size", "-b", "--ubatch-size", "-ub"}, peer: "llama-server", why: "use --max-num-batched-tokens (tokens per step)"},
	{names: []string{"--threads-batch", "-tb"}, peer: "llama-server", why: "-t sets the threads of prefill and decode alike"},
	{names: []string{"--threads-http"}, peer: "llama-server", why: "HTTP connections are goroutines, not a thread pool"},
	{names: []string{"--no-jinja"}, peer: "llama-server", why: "troupe always renders chat templates with Jinja"},
	{names: []string{"--no-cont-batching", "-nocb"}, peer: "llama-server", why: "troupe always batches continuously"},
	{names: []string{"--no-kv-unified", "-no-kvu"}, peer: "llama-server", why: "troupe's paged KV pool is shared by all sequences (-c is per sequence)"},
	{names: []string{"--split-mode", "-sm", "--main-gpu", "-mg", "--tensor-split", "-ts"}, peer: "llama-server", why: "a model is not split across GPUs; --devices runs replicas"},
	{names: []string{"--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--data-parallel-size", "-dp"}, peer: "vLLM", why: "a model is not split across GPUs; --devices runs replicas"},
	{names: []string{"--numa"}, peer: "llama-server", why: "no NUMA placement"},
	{names: []string{"--rope-scaling", "--rope-scale", "--rope-freq-base", "--rope-freq-scale"}, peer: "llama-server", why: "RoPE comes from the model file"},
	{names: []string{"--override-tensor", "-ot", "--cpu-moe", "-cmoe", "--n-cpu-moe", "-ncmoe", "--no-kv-offload", "-nkvo"}, peer: "llama-server", why: "a model runs wholly on one device (--device)"},
	{names: []string{"--context-shift", "--no-context-shift", "--keep"}, peer: "llama-server", why: "a sequence ends at -c (finish_reason length); no context shifting"},
	{names: []string{"--cache-reuse"}, peer: "llama-server", why: "prefix caching is automatic (--no-prefix-caching turns it off)"},
	{names: []string{"--timeout", "-to"}, peer: "llama-server", why: "use --request-timeout (a duration such as 10m) and --write-stall-timeout"},
	{names: []string{"--api-key-file"}, peer: "llama-server", why: "use --api-key or $TROUPE_API_KEY"},
	{names: []string{"--ssl-key-file", "--ssl-cert-file"}, peer: "llama-server/vLLM", why: "no TLS: put a TLS proxy in front"},
	{names: []string{"--path", "--api-prefix"}, peer: "llama-server", why: "the routes are fixed (/v1 and without it)"},
	{names: []string{"--hf-file", "-hff", "--model-url", "-mu"}, peer: "llama-server", why: "use -m hf://OWNER/REPO/FILE.gguf (or -hf OWNER/REPO:QUANT)"},
	{names: []string{"--verbose", "-v", "--log-verbosity", "-lv", "--log-disable"}, peer: "llama-server", why: "use --log-format; troupe logs at info"},
	{names: []string{"--slots", "--no-slots", "--props"}, peer: "llama-server", why: "no /slots or /props routes"},
	{names: []string{"--lora-scaled"}, peer: "llama-server", alias: "lora"},
	{names: []string{"--gpu-memory-utilization"}, peer: "vLLM", why: "use --num-kv-blocks to size the KV pool"},
	{names: []string{"--swap-space"}, peer: "vLLM", why: "use --preemption swap with --swap-blocks"},
	{names: []string{"--cpu-offload-gb"}, peer: "vLLM", why: "a model runs wholly on one device (--device)"},
	{names: []string{"--dtype", "--quantization", "-q"}, peer: "vLLM", why: "weights run in the model file's types (see --repack)"},
	{names: []string{"--kv-cache-dtype"}, peer: "vLLM", why: "use --kv-cache-type f16 or q8_0"},
	{names: []string{"--enforce-eager"}, peer: "vLLM", why: "there are no CUDA graphs to turn off"},
	{names: []string{"--tokenizer", "--revision", "--load-format"}, peer: "vLLM", why: "the tokenizer and weights come from -m's file"},
	{names: []string{"--disable-log-requests", "--disable-log-stats", "--uvicorn-log-level"}, peer: "vLLM", why: "use --log-format; troupe logs one line per request"},
	{names: []string{"--enable-lora"}, peer: "vLLM", on: true},
	{names: []string{"--max-lora-rank"}, peer: "vLLM", value: func(c *serveConfig) flag.Value { return maxRankFlag{&c.MaxLoRARank} }},
	{names: []string{"--max-loras", "--max-cpu-loras"}, peer: "vLLM", why: "troupe runs any number of adapters in one batch and keeps every --lora-modules adapter loaded; there is no such bound"},
	{names: []string{"--root-path", "--middleware", "--response-role"}, peer: "vLLM", why: "no such setting"},
}

// registerPeerFlags defines the peer flags on fs, after serve's own flags
// (an alias looks its flag up).
func registerPeerFlags(fs *flag.FlagSet, c *serveConfig) {
	for _, p := range peerFlags {
		var v flag.Value
		switch {
		case p.alias != "":
			of := fs.Lookup(p.alias)
			if of == nil {
				panic("peer flag " + p.names[0] + ": no flag " + dashed(p.alias)) // a broken table
			}
			v = aliasValue{Value: of.Value, of: p.alias}
		case p.on:
			v = alwaysOn{}
		case p.value != nil:
			v = p.value(c)
		}
		for _, n := range p.names {
			switch a, ok := v.(aliasValue); {
			case ok:
				a.name = n
				v = a
			case p.why != "":
				v = &unsupported{name: n, peer: p.peer, why: p.why}
			}
			fs.Var(v, strings.TrimLeft(n, "-"), peerUsage(p))
		}
	}
}

// peerUsage is a peer flag's usage text (printFlags does not list peer
// flags; README.md's table does).
func peerUsage(p peerFlag) string {
	switch {
	case p.alias != "":
		return p.peer + "'s name for " + dashed(p.alias)
	case p.on:
		return p.peer + "'s switch, always on in troupe"
	case p.value != nil:
		return p.peer + "'s flag"
	}
	return p.peer + "'s flag, not supported: " + p.why
}

// peerValue marks a flag.Value as a peer flag's: printFlags leaves it out.
type peerValue interface{ peerOf() string }

// aliasValue is a peer's name for one of troupe's flags: it sets the same
// value. of is the troupe flag's name, name the alias as the peer spells
// it.
type aliasValue struct {
	flag.Value
	of, name string
}

func (a aliasValue) peerOf() string { return a.of }

// IsBoolFlag makes an alias of a switch a switch.
func (a aliasValue) IsBoolFlag() bool {
	b, ok := a.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// alwaysOn is a peer's switch for what troupe always does.
type alwaysOn struct{}

func (alwaysOn) String() string   { return "" }
func (alwaysOn) IsBoolFlag() bool { return true }
func (alwaysOn) peerOf() string   { return "" }
func (alwaysOn) Set(s string) error {
	if on, err := strconv.ParseBool(s); err != nil || !on {
		return errors.New("always on in troupe")
	}
	return nil
}

// unsupported is a peer flag troupe has no meaning for: giving it is a
// usage error (see unsupportedError).
type unsupported struct {
	name      string // as the peer spells it: "-fa"
	peer, why string
	given     bool // Set was called: parse reports this flag
}

func (u *unsupported) String() string   { return "" }
func (u *unsupported) IsBoolFlag() bool { return true } // fails where it stands, taking no value
func (u *unsupported) peerOf() string   { return "" }
func (u *unsupported) Set(string) error {
	u.given = true
	return errors.New("not supported by troupe")
}

// unsupportedError is the usage error for the unsupported peer flag of fs
// that stopped its parse, or "" when none did.
func unsupportedError(fs *flag.FlagSet) string {
	var msg string
	fs.VisitAll(func(f *flag.Flag) {
		if u, ok := f.Value.(*unsupported); ok && u.given && msg == "" {
			msg = fmt.Sprintf("%s (%s's flag) is not supported by troupe: %s", u.name, u.peer, u.why)
		}
	})
	return msg
}

// gpuLayersFlag is llama-server's -ngl: 0 runs on the CPU (--device
// cpu); any other count, auto or all leaves --device as it is (auto by
// default: the GPU when there is one). troupe does not split a model
// between the CPU and a GPU.
type gpuLayersFlag struct{ device *string }

func (g gpuLayersFlag) String() string { return "" }
func (g gpuLayersFlag) peerOf() string { return "device" }
func (g gpuLayersFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err == nil && n == 0:
		*g.device = "cpu"
	case err != nil && s != "auto" && s != "all":
		return errors.New("want a number of layers, auto or all")
	}
	return nil
}

// kvTypesFlag is llama-server's -ctk and -ctv: troupe's KV cache has one
// element type for K and V (--kv-cache-type), so the two must agree.
type kvTypesFlag struct {
	c     *serveConfig
	first string // the first value given
}

func (k *kvTypesFlag) String() string { return "" }
func (k *kvTypesFlag) peerOf() string { return "kv-cache-type" }
func (k *kvTypesFlag) Set(s string) error {
	if k.first != "" && !strings.EqualFold(k.first, s) {
		return fmt.Errorf("troupe's KV cache has one type for K and V; %s differs from %s", s, k.first)
	}
	k.first = s
	v, err := kv.ParseCacheType(s)
	k.c.Runtime.KVCacheType = v
	return err
}

// offFlag is a switch that clears *p: vLLM's --enable-prefix-caching, the
// default, against --no-prefix-caching.
type offFlag struct{ p *bool }

func (o offFlag) String() string   { return "" }
func (o offFlag) IsBoolFlag() bool { return true }
func (o offFlag) peerOf() string   { return "no-prefix-caching" }
func (o offFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*o.p = !on
	return nil
}

// peerNames returns, for each troupe flag, the peer names that are its
// aliases (printFlags adds them to its line).
func peerNames(fs *flag.FlagSet) map[string][]string {
	out := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if a, ok := f.Value.(aliasValue); ok {
			out[a.of] = append(out[a.of], a.name)
		}
	})
	return out
}

// serveListFlags are serve's list flags that vLLM writes space-separated.
var serveListFlags = []string{"served-model-name", "allowed-origins", "lora-modules"}

// joinListArgs rewrites vLLM's space-separated lists (--served-model-name
// a b) as the comma list troupe's flag takes, so that serve (which takes
// no positional arguments) reads them.
func joinListArgs(args []string, names ...string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		out = append(out, args[i])
		name := strings.TrimLeft(args[i], "-")
		if !strings.HasPrefix(args[i], "-") || strings.Contains(name, "=") || !slices.Contains(names, name) || i+1 >= len(args) {
			continue
		}
		list := []string{args[i+1]}
		for i += 2; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
			list = append(list, args[i])
		}
		i--
		out = append(out, strings.Join(list, ","))
	}
	return out
}

// modelNameFlag is --served-model-name (vLLM's, a list) and --alias
// (llama-server's, a comma list): the first name is the model's, the
// others its aliases.
type modelNameFlag struct {
	name    *string
	aliases *[]string
}

func (m modelNameFlag) String() string {
	if m.name == nil {
		return ""
	}
	return strings.Join(append([]string{*m.name}, *m.aliases...), ",")
}

func (m modelNameFlag) Set(s string) error {
	names := splitList(s)
	if len(names) == 0 {
		return errors.New("want a name")
	}
	*m.name, *m.aliases = names[0], nil
	if len(names) > 1 {
		*m.aliases = names[1:]
	}
	return nil
}
