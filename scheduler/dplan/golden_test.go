package dplan_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/dplan")

// goldenCase is one command of a golden file: the lines before it
// (comments, blank lines) kept verbatim for rewriting, the command line,
// its input and the expected output.
type goldenCase struct {
	pos      string
	prefix   []string
	command  string
	input    string
	expected string
}

// readGolden parses a datadriven-style file: a command line, input lines,
// a "----" line, then the expected output up to a blank line.
func readGolden(path string) ([]*goldenCase, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cases []*goldenCase
	var prefix, in, out []string
	var cur *goldenCase
	state := 0 // 0: between cases, 1: input, 2: expected output
	line := 0
	flush := func() {
		cur.input = strings.Join(in, "\n")
		cur.expected = strings.Join(out, "\n")
		cases = append(cases, cur)
		cur, in, out, state = nil, nil, nil, 0
	}
	for sc.Scan() {
		line++
		l := sc.Text()
		switch state {
		case 0:
			if l == "" || strings.HasPrefix(l, "#") {
				prefix = append(prefix, l)
				continue
			}
			cur = &goldenCase{pos: fmt.Sprintf("%s:%d", filepath.Base(path), line), prefix: prefix, command: l}
			prefix, state = nil, 1
		case 1:
			if l == "----" {
				state = 2
				continue
			}
			in = append(in, l)
		case 2:
			if l == "" {
				flush()
				prefix = append(prefix, l)
				continue
			}
			out = append(out, l)
		}
	}
	if cur != nil {
		if state == 1 {
			return nil, nil, fmt.Errorf("%s: input without a ---- line", cur.pos)
		}
		flush()
	}
	return cases, prefix, sc.Err()
}

// writeGolden writes cases back with their actual outputs.
func writeGolden(path string, cases []*goldenCase, trailer []string) error {
	var b strings.Builder
	for _, c := range cases {
		for _, p := range c.prefix {
			b.WriteString(p + "\n")
		}
		b.WriteString(c.command + "\n" + c.input + "\n----\n")
		if c.expected != "" {
			b.WriteString(c.expected + "\n")
		}
	}
	for _, p := range trailer {
		if p != "" {
			b.WriteString(p + "\n")
		}
	}
	if len(cases) > 0 {
		b.WriteString("\n")
	}
	return os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644)
}

// runGolden runs every file matching pattern through run, comparing (or,
// with -rewrite, replacing) each case's expected output.
func runGolden(t *testing.T, pattern string, run func(t *testing.T, c *goldenCase) string) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files match %s", pattern)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			cases, trailer, err := readGolden(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cases {
				got := strings.TrimRight(run(t, c), "\n")
				if *rewrite {
					c.expected = got
					continue
				}
				if got != c.expected {
					t.Errorf("%s: %s\n%s\n--- got:\n%s\n--- want:\n%s", c.pos, c.command, c.input, got, c.expected)
				}
			}
			if *rewrite {
				if err := writeGolden(path, cases, trailer); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
