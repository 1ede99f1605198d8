package repl

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	"sluice/catalog"
	"sluice/session"
)

// TestCompleteQualifiedAndSingle: table.col and alias.col complete to the
// table's columns (the alias may be defined on an earlier line of the
// statement), and a single match is followed by a space.
func TestCompleteQualifiedAndSingle(t *testing.T) {
	s := session.New(catalog.New())
	defer s.Close()
	emp, err := filepath.Abs("../testdata/slt/data/emp.csv")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Execute(context.Background(), "CREATE EXTERNAL TABLE emp (id INT, name VARCHAR, dept VARCHAR, salary DECIMAL(10,2), hired DATE, manager INT) STORED AS CSV WITH HEADER ROW LOCATION '"+emp+"'")
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	r := &Runner{Session: s}
	c := &completer{r: r}
	do := func(line string) []string {
		got, _ := c.Do([]rune(line), len([]rune(line)))
		var out []string
		for _, g := range got {
			out = append(out, string(g))
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		pending, line string
		want          []string
	}{
		{"", "SELECT emp.sal", []string{"ary "}},
		{"", "SELECT e.n", nil}, // no FROM names e yet
		{"SELECT e.name\nFROM emp AS e", "WHERE e.ma", []string{"nager "}},
		{"", "SELECT x.id FROM emp x WHERE x.", []string{"dept ", "hired ", "id ", "manager ", "name ", "salary "}},
		{"", "SELECT sala", []string{"ry "}},
		{"", "SELECT nosuch.na", nil},
	} {
		r.pending = tc.pending
		got := do(tc.line)
		if len(got) == 6 && len(tc.want) == 6 {
			// Six matches: no trailing space is expected on any; compare
			// the names only.
			for i := range got {
				if got[i] != tc.want[i][:len(tc.want[i])-1] {
					t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
					break
				}
			}
			continue
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("pending %q, line %q: %q, want %q", tc.pending, tc.line, got, tc.want)
		}
	}
}
