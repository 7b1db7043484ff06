package main

import (
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/kv"
)

// parsePeer parses serve's flags as serveCmd does: vLLM's space-separated
// lists joined first.
func parsePeer(t *testing.T, args ...string) (*serveConfig, error) {
	t.Helper()
	return parseServe(t, joinListArgs(args, serveListFlags...)...)
}

// TestPeerFlagAliases: a peer's launch flags set what troupe's own flags
// of the same meaning set.
func TestPeerFlagAliases(t *testing.T) {
	for _, tc := range []struct{ peer, troupe []string }{
		{[]string{"--model", "x.gguf", "--ctx-size", "100", "--threads", "3", "--parallel", "5", "--alias", "n"},
			[]string{"-m", "x.gguf", "-c", "100", "-t", "3", "--max-num-seqs", "5", "--served-model-name", "n"}},
		{[]string{"-np", "6", "-a", "n", "-s", "7", "--chat-template-file", "t.jinja", "--host", "0.0.0.0", "--port", "9", "--api-key", "k"},
			[]string{"--max-num-seqs", "6", "--served-model-name", "n", "--seed", "7", "--chat-template", "t.jinja", "--host", "0.0.0.0", "--port", "9", "--api-key", "k"}},
		{[]string{"--max-model-len", "64", "--served-model-name", "n", "--download-dir", "/d", "--no-enable-prefix-caching"},
			[]string{"-c", "64", "--served-model-name", "n", "--cache-dir", "/d", "--no-prefix-caching"}},
		{[]string{"--jinja", "-cb", "--kv-unified", "--metrics", "--embeddings", "--reranking", "--enable-auto-tool-choice",
			"--enable-chunked-prefill", "--trust-remote-code", "--enable-prefix-caching"}, nil},
		{[]string{"--no-prefix-caching", "--enable-prefix-caching"}, nil},
		{[]string{"-ngl", "0"}, []string{"--device", "cpu"}},
		{[]string{"--n-gpu-layers", "99"}, nil},
		{[]string{"--device", "cuda", "--gpu-layers", "all"}, []string{"--device", "cuda"}},
		{[]string{"-ctk", "q8_0", "-ctv", "q8_0"}, []string{"--kv-cache-type", "q8_0"}},
		{[]string{"--allowed-origins", `["http://a.example", "*"]`}, []string{"--allowed-origins", "http://a.example,*"}},
		{[]string{"--served-model-name", "a", "b"}, []string{"--served-model-name", "a,b"}},
		{[]string{"--alias", "a,b"}, []string{"--served-model-name", "a,b"}},
		{[]string{"--allowed-origins", "http://a.example", "http://b.example", "--port", "1"},
			[]string{"--allowed-origins", "http://a.example,http://b.example", "--port", "1"}},
	} {
		t.Run(strings.Join(tc.peer, " "), func(t *testing.T) {
			got, err := parsePeer(t, tc.peer...)
			if err != nil {
				t.Fatal(err)
			}
			want, err := parsePeer(t, tc.troupe...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q parsed\n%+v\nwant, as %q\n%+v", tc.peer, *got, tc.troupe, *want)
			}
		})
	}
	if c, err := parsePeer(t, "--served-model-name", "a", "b", "c"); err != nil || c.Server.ModelName != "a" || !reflect.DeepEqual(c.Server.ModelAliases, []string{"b", "c"}) {
		t.Errorf("--served-model-name a b c: %v, %q %q", err, c.Server.ModelName, c.Server.ModelAliases)
	}
	c, err := parsePeer(t, "--cache-type-k", "q8_0")
	if err != nil || c.Runtime.KVCacheType != kv.Q8_0 {
		t.Errorf("--cache-type-k q8_0: %v, %v", c.Runtime.KVCacheType, err)
	}
}

// TestPeerFlagErrors: every unsupported peer flag, and a peer flag given a
// value troupe cannot honour, is a one-line exit 2 naming the flag.
func TestPeerFlagErrors(t *testing.T) {
	type bad struct {
		args []string
		want string
	}
	var cases []bad
	for _, p := range peerFlags {
		if p.why == "" {
			continue
		}
		for _, n := range p.names {
			cases = append(cases, bad{[]string{n, "1"}, n + " (" + p.peer + "'s flag) is not supported by troupe: " + p.why})
		}
	}
	cases = append(cases,
		bad{[]string{"--flash-attn=on"}, "--flash-attn (llama-server's flag) is not supported by troupe"},
		bad{[]string{"--served-model-name", ","}, "--served-model-name: want a name"},
		bad{[]string{"-ctk", "q8_0", "-ctv", "f16"}, "--ctv: troupe's KV cache has one type for K and V"},
		bad{[]string{"-ngl", "many"}, "--ngl: want a number of layers, auto or all"},
		bad{[]string{"--jinja=false"}, "--jinja: always on in troupe"},
		bad{[]string{"--api-key", "k1,k2"}, "--api-key: one key, not a comma-separated list"},
	)
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			wantUsage(t, tc.want, append([]string{"serve"}, tc.args...)...)
		})
	}
}

// TestPeerFlagsHelp: --help lists troupe's flags only, each with the peer
// names that are its aliases.
func TestPeerFlagsHelp(t *testing.T) {
	_, help, _ := troupe(t, "serve", "--help")
	for _, want := range []string{"(also --ctx-size, --max-model-len)", "(also -np, --parallel)", "(also --model)"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	for _, f := range helpFlags(t, "serve") {
		if strings.Contains(f, "flash-attn") || f == "--jinja" || f == "--ngl" {
			t.Errorf("serve --help lists the peer flag %s", f)
		}
	}
}

// TestChatTemplateText: --chat-template takes Jinja text itself, as
// llama-server and vLLM do.
func TestChatTemplateText(t *testing.T) {
	src := "{% for m in messages %}{{ m.content }}{% endfor %}"
	got, err := readChatTemplate(src)
	if err != nil || got != src {
		t.Errorf("readChatTemplate(%q) = %q, %v", src, got, err)
	}
}

var readmePeerRowRE = regexp.MustCompile("(?m)^\\| ((?:`-[^`]+`(?:, )?)+) \\|")

// TestReadmePeerFlags: README.md's table of peers' launch flags names
// every peer flag serve knows, and only flags serve defines.
func TestReadmePeerFlags(t *testing.T) {
	b := readFile(t, "../../README.md")
	_, section, ok := strings.Cut(string(b), "### Peers' launch flags")
	if !ok {
		t.Fatal(`README.md has no "### Peers' launch flags" section`)
	}
	section, _, _ = strings.Cut(section, "\n#")
	var readme []string
	for _, m := range readmePeerRowRE.FindAllStringSubmatch(section, -1) {
		for _, f := range strings.Split(m[1], ", ") {
			readme = append(readme, strings.Trim(f, "`"))
		}
	}
	var c serveConfig
	fs := newFlags("serve", io.Discard)
	c.register(fs)
	for _, f := range readme {
		if fs.Lookup(strings.TrimLeft(f, "-")) == nil {
			t.Errorf("README.md's peer flag table has %s, which troupe serve does not define", f)
		}
	}
	for _, p := range peerFlags {
		for _, n := range p.names {
			if !slices.Contains(readme, n) {
				t.Errorf("README.md's peer flag table lacks %s (%s's)", n, p.peer)
			}
		}
	}
}
