package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-llm/troupe/internal/schematest"
)

// TestSchemaWorkNestedTypeLists: the nested type-list schema (about
// 1.7 KB) converts with work linear in its size, counted by the
// Converter, not exponential in its depth.
func TestSchemaWorkNestedTypeLists(t *testing.T) {
	schema := schematest.NestedTypeLists(18)
	if n := len(schema); n < 1500 || n > 2000 {
		t.Fatalf("the schema is %d bytes, want about 1.7 KB", n)
	}
	v := NewConverter(context.Background())
	src, err := v.JSONSchemaGBNF([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	w := v.Work()
	// Each level: the node, its three type copies, its property and items.
	if w.Nodes > 10*18 || w.Bytes > 64*int64(len(schema)) {
		t.Errorf("work %+v for a %d-byte schema, want at most %d nodes and %d bytes", w, len(schema), 10*18, 64*len(schema))
	}
	if _, err := Compile(src); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of schema: work %+v, %d bytes of GBNF", len(schema), w, len(src))
}

// TestSchemaWorkBound: work the memo cannot save (oneOf's disjointness
// walk through $refs that fan out) is refused as too complex once past
// the bound, within the bound's work; and a Converter's budget is shared
// by its conversions.
func TestSchemaWorkBound(t *testing.T) {
	schema := schematest.FanOut()
	v := NewConverter(context.Background())
	_, err := v.JSONSchemaGBNF([]byte(schema))
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("err %v, want ErrTooComplex", err)
	}
	if w := v.Work(); w.Nodes > MaxSchemaNodes+1 {
		t.Errorf("work %+v past the bound %d", w, MaxSchemaNodes)
	}

	v = NewConverter(context.Background())
	one := []byte(schematest.NestedTypeLists(10))
	for i := range 3 {
		if _, err := v.JSONSchemaGBNF(one); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first := v.Work()
			defer func() {
				if w := v.Work(); w.Nodes != 3*first.Nodes || w.Bytes != 3*first.Bytes {
					t.Errorf("three conversions spent %+v, one %+v: the budget is not shared", w, first)
				}
			}()
		}
	}
}

// TestSchemaCancelled: a conversion whose context has ended stops with its
// error.
func TestSchemaCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := NewConverter(ctx)
	_, err := v.JSONSchemaGBNF([]byte(schematest.NestedTypeLists(18)))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	if _, err := CompileContext(ctx, "root ::= [a-z]{100}"); !errors.Is(err, context.Canceled) {
		t.Errorf("CompileContext: err %v, want context.Canceled", err)
	}
}

// TestClassLoweredOnce: a large character class repeated 2000 times is
// lowered to UTF-8 sequences once; the same class written twice is one
// class too.
func TestClassLoweredOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 2000 {
		fmt.Fprintf(&b, `\u%04X`, 0x100+3*i)
	}
	b.WriteString("]")
	cls := b.String()
	for _, tt := range []struct {
		src    string
		lowers int
	}{
		{"root ::= " + cls + "{2000}", 1},
		{"root ::= " + cls + "{0,2000} " + cls + " [a-z]", 2},
	} {
		g, l, err := compile(context.Background(), tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if l.lowers != tt.lowers {
			t.Errorf("%.60s...: %d classes lowered, want %d", tt.src[len(tt.src)-40:], l.lowers, tt.lowers)
		}
		if n := len(g.elems); n > 8*2000 { // a copy: its bytes, or a reference, and the repetition's rules
			t.Errorf("%d elements for 2000 copies of one class", n)
		}
	}
}
