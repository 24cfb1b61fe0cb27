package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"parley/safefile"
	"parley/streamjson"
)

// eachLineBackward gives the lines safefile.LineReader gives, last first,
// whatever the block size: lines straddling blocks, a torn last line,
// CRLF, blank lines, lines at and over the bound.
func TestEachLineBackwardMatchesLineReader(t *testing.T) {
	inputs := []string{
		"", "\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n a \n\n", "x\r\r\n\r\ny",
		"12345678\n123456789\n", "123456789", "1234567\n12345678", "abc\n123456789012\nd",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(strings.Repeat("x", rng.IntN(20)))
			b.WriteString([]string{"\n", "\r\n", "\n\n", " \n"}[rng.IntN(4)])
		}
		b.WriteString(strings.Repeat("y", rng.IntN(12))) // a torn last line, or none
		inputs = append(inputs, b.String())
	}
	for _, in := range inputs {
		for _, max := range []int{8, 9, 1 << 20} {
			want := forwardLines(t, in, max)
			for _, block := range []int{1, 2, 3, 5, 8, 64, tailBlock} {
				var got []string
				err := eachLineBackward(strings.NewReader(in), int64(len(in)), block, max, func(off int64, line []byte) bool {
					if !strings.HasPrefix(in[off:], string(line)) {
						t.Errorf("%q: line %q is not at offset %d", in, line, off)
					}
					got = append(got, string(line))
					return true
				})
				if err != nil {
					t.Fatal(err)
				}
				slices.Reverse(got)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%q, block %d, max %d (-LineReader +backward):\n%s", in, block, max, diff)
				}
			}
		}
	}
}

// forwardLines is what streamjson.EachLine hands on, via safefile.LineReader.
func forwardLines(t *testing.T, in string, max int) []string {
	t.Helper()
	var lines []string
	lr := safefile.NewLineReader(strings.NewReader(in), max)
	for {
		line, err := lr.Next()
		if errors.Is(err, safefile.ErrLineTooLong) {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, string(line))
		}
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// eachLineBackward stops when told, having read only the end.
func TestEachLineBackwardReadsOnlyTheEnd(t *testing.T) {
	in := strings.Repeat(strings.Repeat("a", 99)+"\n", 10000) + "last\n"
	r := &countingReaderAt{r: strings.NewReader(in)}
	var got string
	if err := eachLineBackward(r, int64(len(in)), tailBlock, 1<<20, func(_ int64, line []byte) bool {
		got = string(line)
		return false
	}); err != nil {
		t.Fatal(err)
	}
	if got != "last" || r.n > tailBlock {
		t.Fatalf("got %q after reading %d bytes, want \"last\" within one block (%d)", got, r.n, tailBlock)
	}
}

type countingReaderAt struct {
	r io.ReaderAt
	n int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += n
	return n, err
}

// danglingPrime, reading the tail only, answers as the search through the
// whole transcript did, on real lines at and across block boundaries.
func TestDanglingPrimeTail(t *testing.T) {
	const id = "0b0e5a7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	real, err := os.ReadFile(danglingPrimeFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(real, []byte("\n"))
	prime := string(lines[danglingPrimeTurn+1])
	answer := `{"type":"assistant","uuid":"p2","parentUuid":"` + danglingPrimeUUID + `","message":{"id":"` + streamjson.PrimeMessagePrefix + `ab","role":"assistant","content":[{"type":"text","text":"ok"}]}}` + "\n"
	rewound := `{"type":"last-prompt","leafUuid":"a0","rewound":true,"cutUuid":"` + danglingPrimeUUID + `"}` + "\n"
	attachment := func(n int) string {
		return `{"type":"attachment","uuid":"x","attachment":{"content":"` + strings.Repeat("z", n) + `"}}` + "\n"
	}
	realTurn := func(n int) string {
		return `{"type":"user","uuid":"u9","message":{"role":"user","content":"` + strings.Repeat("w", n) + `"}}` + "\n"
	}
	// The last block starts 300 bytes before the prime line's end.
	afterPrime := len(bytes.Join(lines[danglingPrimeTurn+2:], nil))
	straddle := string(real) + attachment(tailBlock-300-afterPrime-len(attachment(0)))
	if start, end := len(straddle)-tailBlock-300, len(straddle)-tailBlock+300; !strings.Contains(straddle[start:end], prime[len(prime)-400:len(prime)-200]) {
		t.Fatal("the straddling prime does not straddle")
	}
	for _, tt := range []struct {
		name, data, want string
	}{
		{"real transcript, prime at the end", string(real), danglingPrimeUUID},
		{"torn last line", strings.TrimSuffix(string(real), "\n"), danglingPrimeUUID},
		{"a partial line after it", string(real) + `{"type":"user","mess`, danglingPrimeUUID},
		{"a partial real turn after it", string(real) + `{"type":"user","uuid":"u9","message":{"role":"user","content":"hi"}}`, ""},
		{"shorter than a block", prime, danglingPrimeUUID},
		{"prime line straddling a block boundary", straddle, danglingPrimeUUID},
		{"prime larger than a block", strings.Replace(prime, `"userType"`, `"pad":"`+strings.Repeat("p", 3*tailBlock)+`","userType"`, 1), danglingPrimeUUID},
		{"a huge last entry after it", string(real) + answer + attachment(5*tailBlock), danglingPrimeUUID},
		{"its answer and rewind", string(real) + answer + attachment(2*tailBlock) + rewound, ""},
		{"a real turn after it", string(real) + answer + realTurn(10), ""},
		{"a huge real turn after it", string(real) + answer + realTurn(5*tailBlock), ""},
		{"a line over the bound after it", string(real) + realTurn(streamjson.MaxTranscriptLine), danglingPrimeUUID},
		{"no prime", string(bytes.Join(lines[:danglingPrimeTurn], nil)), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTranscript(t, id, []byte(tt.data))
			if got := danglingPrime(dir, id); got != tt.want {
				t.Fatalf("danglingPrime = %q, want %q", got, tt.want)
			}
			if got := danglingPrimeWhole(strings.NewReader(tt.data)); got != tt.want {
				t.Fatalf("the search through the whole transcript = %q, want %q", got, tt.want)
			}
		})
	}
}

// Random transcripts of the lines that matter, with padding across
// blocks: the tail search and the whole one agree on each.
func TestDanglingPrimeTailAgreesWithWholeSearch(t *testing.T) {
	const id = "0b0e5a7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	primeOf := func(u string) string {
		return `{"type":"user","uuid":"` + u + `","message":{"role":"user","content":"` + streamjson.PrimeText + `"}}`
	}
	pool := []string{
		primeOf("p1"), primeOf("p2"),
		`{"type":"user","uuid":"p3","message":{"role":"user","content":[{"type":"text","text":"` + streamjson.PrimeText + `"}]}}`,
		`{"type":"user","uuid":"q1","message":{"role":"user","content":"say ` + streamjson.PrimeText + `"}}`,
		`{"type":"assistant","uuid":"a1","message":{"id":"` + streamjson.PrimeMessagePrefix + `1","content":[]}}`,
		`{"type":"assistant","uuid":"a2","message":{"id":"msg_01","content":[{"type":"text","text":"` + streamjson.PrimeText + `"}]}}`,
		`{"type":"last-prompt","rewound":true,"cutUuid":"p1"}`, `{"type":"last-prompt","rewound":true,"cutUuid":"p2"}`,
		`{"type":"last-prompt","rewound":true,"cutUuid":""}`, `{"type":"last-prompt","leafUuid":"a1"}`,
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"hello"}}`,
		`{"type":"\u0075ser","uuid":"u2","message":{"role":"user","content":"escaped"}}`,
		`{"type":"assistant","uuid":"a3","message":{"id":"msg_02","content":[]}}`,
		`{"type":"attachment","uuid":"x"}`, `not json "user"`, ``, ` `,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	found := map[bool]int{}
	for i := range 300 {
		var b strings.Builder
		for range rng.IntN(10) {
			if rng.IntN(4) == 0 {
				b.WriteString(`{"type":"attachment","pad":"` + strings.Repeat("z", rng.IntN(2*tailBlock)) + `"}`)
			} else {
				b.WriteString(pool[rng.IntN(len(pool))])
			}
			b.WriteString([]string{"\n", "\r\n"}[rng.IntN(2)])
		}
		if rng.IntN(3) == 0 {
			s := pool[rng.IntN(len(pool))]
			b.WriteString(s[:rng.IntN(len(s)+1)]) // torn
		}
		in := b.String()
		want := danglingPrimeWhole(strings.NewReader(in))
		for _, block := range []int{7, 100, 4096, tailBlock} {
			if got := danglingPrimeIn(strings.NewReader(in), int64(len(in)), block); got != want {
				t.Fatalf("transcript %d, block %d: tail search %q, whole search %q:\n%.2000s", i, block, got, want, in)
			}
		}
		found[want != ""]++
	}
	if found[true] < 30 || found[false] < 30 {
		t.Fatalf("dangling primes in %d transcripts, none in %d: too few of one to compare", found[true], found[false])
	}
}

// danglingPrimeWhole is the search as it was before it read the tail
// only (runner/unprime.go at commit b55a152, unchanged but for opening
// the file): every line of the transcript, forwards. The tail search must answer as it does.
func danglingPrimeWhole(f io.Reader) string {
	primeText, _ := json.Marshal(streamjson.PrimeText)
	open := "" // the last prime turn, while nothing but its answer followed it
	_ = streamjson.EachLine(f, func(_ int, line []byte) bool {
		var e struct {
			Type    string          `json:"type"`
			UUID    string          `json:"uuid"`
			Message json.RawMessage `json:"message"`
			Rewound bool            `json:"rewound"`
			Cut     string          `json:"cutUuid"`
		}
		isPrime := bytes.Contains(line, primeText[1:len(primeText)-1])
		if !isPrime && open == "" {
			return true // most lines: only a prime turn starts a search
		}
		if !isPrime && !bytes.Contains(line, []byte(`"user"`)) && !bytes.Contains(line, []byte(`"assistant"`)) && !bytes.Contains(line, []byte(`"rewound"`)) {
			return true // attachments, bookkeeping
		}
		if json.Unmarshal(line, &e) != nil {
			return true
		}
		switch {
		case isPrime && e.Type == "user" && e.UUID != "" && primeEcho(line) == e.UUID:
			open = e.UUID
		case e.Type == "last-prompt" && e.Rewound && e.Cut == open:
			open = ""
		case e.Type == "assistant" && streamjson.IsPrimeAnswer(e.Message):
		case e.Type == "user" || e.Type == "assistant":
			open = ""
		}
		return true
	}, nil)
	return open
}
