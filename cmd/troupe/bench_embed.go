package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/troupe-llm/troupe/actors"
	"github.com/troupe-llm/troupe/actors/backend"
)

// embedSentences are bench embed's inputs unless -f gives others: English
// sentences of 5 to 25 words (`troupe bench embed --print-sentences` writes
// them, one per line, for llama-embedding -f).
var embedSentences = []string{
	"The quick brown fox jumps over the lazy dog.",
	"A journey of a thousand miles begins with a single step.",
	"Embeddings map text to vectors so that similar meanings lie close together.",
	"She sold sea shells by the sea shore.",
	"The weather today is sunny with a light breeze from the west.",
	"Retrieval augmented generation finds relevant passages before the model answers a question.",
	"He opened the door and found a small package on the step.",
	"Water boils at one hundred degrees Celsius at sea level.",
	"The committee will meet again next Tuesday to review the budget proposal and the hiring plan.",
	"Cats sleep for most of the day.",
	"Our library has thousands of books about history, science, art and music.",
	"Please remember to turn off the lights when you leave the office.",
	"The train to the airport leaves every fifteen minutes during the morning rush.",
	"A good cup of coffee can make a long morning much easier.",
	"The river flooded after three days of heavy rain in the mountains.",
	"Children learn languages faster than most adults do.",
	"The server returned an error because the request body was not valid JSON.",
	"In the autumn the leaves turn red, orange and yellow before they fall.",
	"She practiced the piano for two hours every evening.",
	"The museum is closed on Mondays.",
	"Scientists discovered a new species of frog in the rain forest last year.",
	"Fresh bread smells wonderful when it comes out of the oven.",
	"The meeting was postponed because the manager was ill.",
	"He wrote a long letter to his grandmother describing his first week at university.",
	"Solar panels convert sunlight into electricity.",
	"The old bridge was replaced by a wider one with lanes for bicycles.",
	"Most birds build their nests in the spring.",
	"The recipe calls for two eggs, a cup of flour and a pinch of salt.",
	"Traffic was light on the highway this morning.",
	"The students presented their project to the whole school at the end of the term.",
	"A small boat drifted slowly across the calm lake.",
	"Good documentation saves every new engineer many hours of confusion.",
}

// benchEmbed measures embedding sentences per second through the runtime
// (Runtime.Embed, as the HTTP routes use it) at each batch size: a batch is
// one Embed call of B sentences, the calls one after another.
func benchEmbed(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench embed", stderr)
	path := fs.String("m", "", "model: a GGUF file (an encoder such as bge, or a decoder) (required)")
	sizes := fs.String("b", "1,32", "batch sizes, comma-separated: sentences per Embed call")
	n := fs.Int("n", 128, "sentences per batch size (rounded up to a whole number of batches)")
	file := fs.String("f", "", "a file of sentences, one per line (default: 32 built-in English sentences)")
	threads := fs.Int("t", 2, "threads of the forward pass")
	print := fs.Bool("print-sentences", false, "write the built-in sentences, one per line, and exit")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *print {
		_, err := fmt.Fprintln(stdout, strings.Join(embedSentences, "\n"))
		return err
	}
	bs, err := parseSizes(*sizes)
	switch {
	case *path == "":
		return usageError{"-m MODEL is required"}
	case err != nil:
		return usageError{fmt.Sprintf("-b %q: %v", *sizes, err)}
	case *n < 1 || *threads < 1:
		return usageError{"-n and -t must be at least 1"}
	}
	sentences := embedSentences
	if *file != "" {
		if sentences, err = readLines(*file); err != nil {
			return err
		}
	}
	m, err := openModel(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	var inputs [][]int32
	tokens := 0
	for _, s := range sentences {
		ids, err := m.Tokenizer.Encode(s, true, true)
		if err != nil {
			return fmt.Errorf("bench embed: tokenizing %q: %w", s, err)
		}
		inputs = append(inputs, ids)
		tokens += len(ids)
	}
	maxB := 0
	for _, b := range bs {
		maxB = max(maxB, b)
	}
	longest := 0
	for _, in := range inputs {
		longest = max(longest, len(in))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	system := newActorSystem()
	defer system.Shutdown()
	cfg := actors.Config{Workers: *threads, MaxNumSeqs: max(64, maxB), MaxNumBatchedTokens: max(512, maxB*longest),
		NewBackend: backend.For(m, backend.DeviceCPU)}
	rt, err := actors.Start(system, m, cfg)
	if err != nil {
		return err
	}
	defer rt.Stop(10 * time.Second)
	pool, err := rt.EmbedPooling(actors.EmbedOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "model %s: %s, %d layers, dim %d; %s pooling, threads %d, %d sentences of %.1f tokens on average\n\n",
		*path, m.Config.Arch, m.Config.Layers, m.Config.Dim, pool, *threads, len(inputs), float64(tokens)/float64(len(inputs)))
	if _, _, err := rt.Embed(ctx, inputs[:1], actors.EmbedOptions{}); err != nil { // warm up
		return err
	}
	fmt.Fprintln(stdout, "|    B | sentences | tokens |      T s | sentences/s |  tokens/s |")
	fmt.Fprintln(stdout, "|------|-----------|--------|----------|-------------|-----------|")
	for _, b := range bs {
		total := (*n + b - 1) / b * b
		next, toks := 0, 0
		start := time.Now()
		for done := 0; done < total; done += b {
			batch := make([][]int32, b)
			for i := range batch {
				batch[i] = inputs[next%len(inputs)]
				toks += len(batch[i])
				next++
			}
			if _, _, err := rt.Embed(ctx, batch, actors.EmbedOptions{}); err != nil {
				return err
			}
		}
		sec := time.Since(start).Seconds()
		fmt.Fprintf(stdout, "| %4d | %9d | %6d | %8.3f | %11.2f | %9.1f |\n", b, total, toks, sec, float64(total)/sec, float64(toks)/sec)
	}
	return nil
}

// readLines reads the non-empty lines of path.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-f: %s has no sentences", path)
	}
	return out, nil
}
