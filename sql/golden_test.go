package sql

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluice/plan"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata/binder")

// formatQuery renders a bound query for golden files: output names, then
// the plan with each node's output columns and types.
func formatQuery(q *Query) string {
	var b strings.Builder
	b.WriteString("names: " + strings.Join(q.Names, ", ") + "\n")
	cols := q.Plan.Schema()
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + plan.TypeName(c.Type)
		if !c.Nullable {
			parts[i] += " NOT NULL"
		}
	}
	b.WriteString("types: " + strings.Join(parts, ", ") + "\n")
	b.WriteString(plan.Format(q.Plan))
	// plan.Format does not descend into subquery plans; list them after.
	var subs []*plan.Subquery
	var visit func(n plan.Node)
	visit = func(n plan.Node) {
		for _, e := range plan.Exprs(n) {
			plan.Walk(e, func(x plan.Expr) bool {
				if s, ok := x.(*plan.Subquery); ok {
					subs = append(subs, s)
				}
				return true
			})
		}
		for _, c := range n.Children() {
			visit(c)
		}
	}
	visit(q.Plan)
	for i := 0; i < len(subs); i++ {
		fmt.Fprintf(&b, "subquery %d: %s\n", i+1, subs[i].String())
		b.WriteString(indent(plan.Format(subs[i].Plan)))
		visit(subs[i].Plan)
	}
	return b.String()
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

// checkGolden compares got with testdata/binder/name.txt (or rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "testdata", "binder", name+".txt")
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create)", err)
	}
	if string(want) != got {
		t.Errorf("%s: plan differs from golden file\n--- got:\n%s\n--- want:\n%s", name, got, want)
	}
}
