package plan

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "regenerate the golden files in testdata/optimizer")

// goldenHeader opens every golden file, explaining the format.
const goldenHeader = `# Golden plans for the logical optimizer (plan/*_test.go).
# Each case starts with "=== <name>". "--- before" holds plan.Format of the
# input plan (built in Go by the test), then "--- after" the plan after the
# rule(s) ran, or "--- error" the error they returned. Lines starting with
# '#' before the first case are this header. Regenerate with
#   go test ./plan/ -run <Test> -rewrite
# and review the diff.
`

// goldenCase is one plan rewritten by one rule (or the whole optimizer).
type goldenCase struct {
	name  string
	build func(b *tb) Node
	apply func(Node, *OptContext) (Node, error)
}

// optimizeAll adapts Optimize to a rule's signature.
func optimizeAll(n Node, ctx *OptContext) (Node, error) { return Optimize(n, ctx.IDs) }

// runGolden runs the cases and compares with (or, with -rewrite, writes)
// testdata/optimizer/<file>.
func runGolden(t *testing.T, file string, cases []goldenCase) {
	t.Helper()
	path := filepath.Join("testdata", "optimizer", file)
	var got strings.Builder
	got.WriteString(goldenHeader)
	want := map[string]string{}
	if !*rewrite {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("reading %s (run with -rewrite to create it): %v", path, err)
		}
		want = parseGolden(string(data))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newTB()
			in := c.build(b)
			sec := "--- before\n" + Format(in)
			out, err := c.apply(in, &OptContext{IDs: b.ids})
			if err != nil {
				sec += "--- error\n" + err.Error() + "\n"
			} else {
				sec += "--- after\n" + Format(out)
				if !planHasSubquery(out) {
					if err := checkPlan(out); err != nil {
						t.Errorf("invalid plan after rewrite: %v\n%s", err, Format(out))
					}
				}
				if !sameSchema(out.Schema(), in.Schema()) {
					t.Errorf("output columns changed: %v -> %v", in.Schema(), out.Schema())
				}
			}
			got.WriteString("\n=== " + c.name + "\n" + sec)
			if *rewrite {
				return
			}
			w, ok := want[c.name]
			if !ok {
				t.Fatalf("case missing from %s (run with -rewrite)\n%s", path, sec)
			}
			if w != sec {
				t.Errorf("mismatch with %s:\n--- got\n%s\n--- want\n%s", path, sec, w)
			}
		})
	}
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseGolden splits a golden file into case name → section text (the
// lines after the "=== name" line, blank separator lines dropped).
func parseGolden(s string) map[string]string {
	out := map[string]string{}
	name := ""
	var sec strings.Builder
	flush := func() {
		if name != "" {
			out[name] = sec.String()
		}
		sec.Reset()
	}
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "=== "):
			flush()
			name = strings.TrimPrefix(line, "=== ")
		case name == "" || line == "":
		default:
			sec.WriteString(line + "\n")
		}
	}
	flush()
	return out
}

func TestParseGolden(t *testing.T) {
	got := parseGolden("# header\n\n=== a\n--- before\nX\n--- after\nY\n\n=== b\n--- error\nboom\n")
	if got["a"] != "--- before\nX\n--- after\nY\n" || got["b"] != "--- error\nboom\n" || len(got) != 2 {
		t.Fatalf("parseGolden = %q", got)
	}
}

// TestOptimizeTPCH runs the whole optimizer over the shapes of the TPC-H
// queries that stress it.
func TestOptimizeTPCH(t *testing.T) {
	var cases []goldenCase
	for _, q := range tpchQueries {
		cases = append(cases, goldenCase{name: q.name, build: q.build, apply: optimizeAll})
	}
	runGolden(t, "tpch.txt", cases)
}

// TestOptimizeRemovesSubqueries checks the invariants the physical planner
// relies on for every TPC-H shape.
func TestOptimizeRemovesSubqueries(t *testing.T) {
	for _, q := range tpchQueries {
		t.Run(q.name, func(t *testing.T) {
			b := newTB()
			in := q.build(b)
			out, err := Optimize(in, b.ids)
			if err != nil {
				t.Fatal(err)
			}
			if planHasSubquery(out) {
				t.Fatalf("subquery left:\n%s", Format(out))
			}
			if err := checkPlan(out); err != nil {
				t.Fatalf("%v\n%s", err, Format(out))
			}
			if !sameSchema(in.Schema(), out.Schema()) {
				t.Fatalf("root columns changed")
			}
			// No cross products: every inner join has a condition.
			TransformUp(out, func(n Node) Node {
				if j, ok := n.(*Join); ok && j.Kind == JoinInner && j.Cond == nil && !oneRow(j.Right) && !oneRow(j.Left) {
					t.Errorf("cross product left in plan:\n%s", Format(out))
				}
				return n
			})
		})
	}
}
