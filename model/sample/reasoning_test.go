package sample

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReasoningBudgetMatchesLlamaCpp: on 24 scripted token streams, the
// budget forces the same tokens at the same places as llama.cpp b10573's
// common_reasoning_budget_init(nullptr, {{7}, {5, 6}}, {{8}, {6, 5}},
// {3, 8}, budget): testdata/reasoning-budget.txt was printed by a C++
// program linked against libllama-common, taking the script's token
// unless the sampler left a single token.
func TestReasoningBudgetMatchesLlamaCpp(t *testing.T) {
	f, err := os.Open("testdata/reasoning-budget.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	cases, forced := 0, 0
	for sc.Scan() {
		head := strings.Fields(sc.Text())
		if !sc.Scan() {
			t.Fatal("a script without its output")
		}
		want := strings.Fields(sc.Text())[1:]
		budget, _ := strconv.Atoi(head[1])
		b := NewReasoningBudget([][]int32{{7}, {5, 6}}, [][]int32{{8}, {6, 5}}, []int32{3, 8}, budget, nil)
		var got []string
		for i, s := range head[3:] {
			tok, _ := strconv.Atoi(s)
			if f, ok := b.Forced(); ok {
				tok = int(f)
				if s != want[i] {
					forced++
				}
			}
			b.Accept(int32(tok))
			got = append(got, strconv.Itoa(tok))
		}
		if !slices.Equal(got, want) {
			t.Errorf("budget %d, script %v:\n got %v\nwant %v", budget, head[3:], got, want)
		}
		cases++
	}
	if cases != 24 || forced == 0 {
		t.Errorf("%d cases, %d forced tokens that changed the script; want 24 and some", cases, forced)
	}
}

// TestReasoningBudgetUTF8AndPrefill: a spent budget waits for a token that
// completes a character before it forces; a prompt that ends inside a
// section starts the count there, and one that closed its section does not.
func TestReasoningBudgetUTF8AndPrefill(t *testing.T) {
	partial := func(id int32) bool { return id != 9 } // token 9 ends inside a character
	b := NewReasoningBudget([][]int32{{7}}, [][]int32{{8}}, []int32{3, 8}, 2, partial)
	var out []int32
	for _, tok := range []int32{7, 1, 9, 9, 2, 1, 1} {
		if f, ok := b.Forced(); ok {
			tok = f
		}
		b.Accept(tok)
		out = append(out, tok)
	}
	if want := []int32{7, 1, 9, 9, 2, 3, 8}; !slices.Equal(out, want) {
		t.Errorf("utf-8: got %v, want %v", out, want)
	}

	for _, tt := range []struct {
		prompt []int32
		forced bool // after one more token
	}{
		{[]int32{1, 7, 2}, true}, // open: 2 counts, one more spends the budget of 2
		{[]int32{1, 7, 2, 8}, false},
		{[]int32{7, 8, 1, 7}, false}, // open, but nothing counted yet
		{[]int32{1, 2}, false},
	} {
		b := NewReasoningBudget([][]int32{{7}}, [][]int32{{8}}, []int32{3, 8}, 2, nil)
		b.Prefill(tt.prompt)
		b.Accept(4)
		if _, ok := b.Forced(); ok != tt.forced {
			t.Errorf("prompt %v: forcing %v, want %v", tt.prompt, ok, tt.forced)
		}
	}
}
