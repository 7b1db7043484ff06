package main

import (
	"flag"

	"github.com/troupe-llm/troupe/kv"
)

// kvCacheTypeFlag defines --kv-cache-type on fs (llama.cpp's -ctk/-ctv,
// one type for K and V); a bad value is a usage error from parse.
func kvCacheTypeFlag(fs *flag.FlagSet) *kv.CacheType {
	t := new(kv.CacheType)
	kvCacheTypeVar(fs, t)
	return t
}

// kvCacheTypeVar is kvCacheTypeFlag writing into t.
func kvCacheTypeVar(fs *flag.FlagSet, t *kv.CacheType) {
	fs.Func("kv-cache-type", "KV cache element `type`: f16 or q8_0 (llama.cpp's -ctk/-ctv; q8_0 halves its memory again, CPU only) (default f16)",
		func(s string) error {
			v, err := kv.ParseCacheType(s)
			*t = v
			return err
		})
}
